package index

import (
	"sort"

	"github.com/docsift/docsift/analysis"
)

// Fusion constants. Each side contributes its top candidates; every
// candidate is then scored exactly on both sides (a cosine is one dot
// product, and BM25 is known for every doc matching a term), so a chunk the
// other side ranked 101st is not treated as a zero.
const (
	// minCandidates is the fewest candidates each side contributes; a
	// pool well beyond K lets fusion promote a chunk both sides rank
	// moderately over one that only one side likes.
	minCandidates = 100
	// vectorWeight is the weight of the normalised cosine in the convex
	// combination; the lexical score gets the rest.
	vectorWeight = 0.5
)

// Search returns up to q.K entries, best first.
func (x *OwnerIndex) Search(q Query) []Hit {
	if q.K <= 0 {
		return nil
	}
	var query []termCount
	if q.Text != "" {
		query, _ = countTerms(analysis.Terms(q.Text))
	}
	useVec := q.Vector != nil && len(q.Vector) == x.dim && x.dim > 0
	useLex := len(query) > 0
	if !useVec && !useLex {
		return nil
	}
	pool := q.K
	if useLex {
		pool = max(minCandidates, 2*q.K)
	}

	x.mu.RLock()
	defer x.mu.RUnlock()

	var vecTop []scored
	if useVec {
		vecTop = x.vec.search(q.Vector, pool)
	}
	var lex *lexScores
	var lexTop []scored
	if useLex {
		lex = x.lex.scoreAll(query)
		defer lex.release()
		lexTop = lex.top(pool)
	}

	// Candidates by ID with both raw scores.
	type cand struct {
		id      uint64
		cos, bm float32
	}
	seen := make(map[uint64]int, len(vecTop)+len(lexTop))
	cands := make([]cand, 0, len(vecTop)+len(lexTop))
	for _, s := range vecTop {
		id := x.vs.ids[s.slot]
		seen[id] = len(cands)
		cands = append(cands, cand{id: id, cos: s.score})
	}
	for _, s := range lexTop {
		id := x.lex.docID[s.slot]
		if i, ok := seen[id]; ok {
			cands[i].bm = s.score
			continue
		}
		seen[id] = len(cands)
		cands = append(cands, cand{id: id, bm: s.score})
	}
	// Fill in the side that did not nominate a candidate.
	for i := range cands {
		c := &cands[i]
		if useVec && c.cos == 0 {
			if s, ok := x.vs.slotOf[c.id]; ok {
				c.cos = x.vs.dot(q.Vector, s)
			}
		}
		if useLex && c.bm == 0 {
			if d, ok := x.lex.docOf[c.id]; ok {
				c.bm = lex.score[d]
			}
		}
	}

	// Normalise each side by its best score (theoretical minimum 0, observed
	// maximum) and combine.
	var maxCos, maxBM float32
	for _, c := range cands {
		maxCos = max(maxCos, c.cos)
		maxBM = max(maxBM, c.bm)
	}
	wv, wl := vectorWeight, 1-vectorWeight
	switch {
	case !useVec || maxCos <= 0:
		wv, wl = 0, 1
	case !useLex || maxBM <= 0:
		wv, wl = 1, 0
	}
	hits := make([]Hit, 0, len(cands))
	for _, c := range cands {
		if !useLex {
			// Vector only: the cosine itself is the most useful score.
			hits = append(hits, Hit{ID: c.id, Score: float64(c.cos)})
			continue
		}
		var score float64
		if wv > 0 && maxCos > 0 {
			score += wv * float64(max(c.cos, 0)/maxCos)
		}
		if wl > 0 && maxBM > 0 {
			score += wl * float64(c.bm/maxBM)
		}
		hits = append(hits, Hit{ID: c.id, Score: score})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if len(hits) > q.K {
		hits = hits[:q.K]
	}
	return hits
}
