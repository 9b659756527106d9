package index

import (
	"cmp"
	"slices"
	"strings"
)

// Fusion constants. Each side contributes its top candidates; every
// candidate is then scored exactly on both sides (a cosine is one dot
// product, and BM25 one lookup of each query term's lists), so a chunk the
// other side ranked 101st is not treated as a zero.
const (
	// minCandidates is the fewest candidates each side contributes; a
	// pool well beyond K lets fusion promote a chunk both sides rank
	// moderately over one that only one side likes.
	minCandidates = 100
	// learnedVectorWeight is the weight of the normalised cosine in the
	// convex combination (the lexical score gets the rest) when vectors
	// come from a learned embedding model: it sees synonyms and paraphrase
	// that BM25 cannot, so the two get an equal say.
	learnedVectorWeight = 0.5
	// hashedVectorWeight is the weight for the built-in embedder, whose
	// vectors hash the same words BM25 already scores, without IDF: they
	// add word-order, sub-word and (through feedback) co-occurrence
	// evidence, so they adjust the lexical ranking rather than vote as
	// equals.
	hashedVectorWeight = 0.2
	// hashedModelPrefix names the built-in embedder's models ("builtin-v2").
	hashedModelPrefix = "builtin"
	// hashedCandidates is the fewest candidates the vector side of a
	// hybrid search nominates for the built-in embedder's vectors, from a
	// graph walk keeping tuning.hashedWalk (a learned model's side nominates as
	// many as BM25's, from a walk of efSearchFor the graph). Those vectors
	// hash the words BM25 scores, so BM25's pool already holds most chunks
	// they would nominate, and every candidate is scored exactly on both
	// sides however it came; their nearest neighbours are near ties that
	// no walk finds (recall@10 0.05–0.13 at a million chunks; hnswlib and
	// FAISS find as few on the same vectors at 100,000).
	// On bench scale's million-chunk owner a walk 25 times as wide changes
	// 2% of the top ten (BenchmarkSearchSnapshot/hybrid reports it), while
	// the usual walk was a fifth of a query's CPU.
	hashedCandidates = 20

	// Pseudo-relevance feedback (Rocchio, 1971): the query vector is moved
	// towards the mean of the feedbackDocs best first-pass chunks, with
	// weight feedbackWeight (Rocchio's textbook β), and candidates are
	// re-scored with it. The top chunks share vocabulary with other
	// relevant chunks that the query itself does not use.
	feedbackDocs   = 5
	feedbackWeight = 0.75
)

// tuning is the choices of a search's paths that give the same results,
// or nearly, kept by each index (and read by its views) so that tests and
// benchmarks can take each path on one index.
type tuning struct {
	// hashedWalk is the list kept by the graph walk of a hybrid search's
	// vector side for the built-in embedder's vectors (see
	// hashedCandidates): no more than it nominates. On bench scale's
	// million-chunk owner a walk keeping 40 kept 97.7% of the top five
	// that one keeping 1,000 finds, and this one 97.4%, for 15% less of
	// an index search's time (600 queries) and 8% less of a query's CPU
	// in the server; the evaluations (MS MARCO, pdfqa) gave the same
	// figures with either. BenchmarkSearchSnapshot widens it.
	hashedWalk int
	// skipCost is what skipping one doc of a posting list costs, in
	// postings asked one at a time (see defaultSkipCost); tests set it to
	// take one way or the other.
	skipCost int
	// fieldPass makes scoreTerms score every term by the field pass,
	// never by scoreBody's fast path: tests check that both give the
	// same scores.
	fieldPass bool
}

// defaultTuning is the paths a search takes.
func defaultTuning() *tuning {
	return &tuning{hashedWalk: hashedCandidates, skipCost: defaultSkipCost}
}

// hashed reports whether model's vectors are the built-in embedder's.
func hashed(model string) bool { return strings.HasPrefix(model, hashedModelPrefix) }

// vectorWeight is the fusion weight of the vector side for vectors of model.
func vectorWeight(model string) float64 {
	if hashed(model) {
		return hashedVectorWeight
	}
	return learnedVectorWeight
}

// candidate is one chunk nominated by either side, with both raw scores.
type candidate struct {
	id      uint64
	slot    uint32
	cos, bm float32
}

// Search returns up to q.K entries, best first. With both a vector and
// text, Score is the fused relevance in [0, 1]; with text only it is BM25
// relative to the best hit; with a vector only it is the cosine.
func (x *OwnerIndex) Search(q Query) []Hit {
	if q.K <= 0 {
		return nil
	}
	v := q.viewOf(x)
	var query []queryTerm
	if q.Text != "" {
		query = v.queryTerms(q.Text)
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

	var allow *allowed // nil: no filter
	if q.Filter != nil {
		allow = x.allowedFor(v, q.Filter, q.FilterKey)
		defer allow.release()
		if allow.count == 0 {
			return nil
		}
	}
	var vecTop []scored
	if useVec {
		vecPool, walk := pool, 0
		if useLex && hashed(x.model) {
			vecPool, walk = max(hashedCandidates, 2*q.K), v.tuning.hashedWalk
		}
		vecTop = v.searchVectorsAllowed(q.Vector, vecPool, walk, allow)
	}
	var lex *lexSide
	var lexTop []scored
	if useLex {
		lex = v.lexical(query, pool, allow)
		defer lex.release()
		lexTop = lex.top
	}

	// Vector slots and lexical docs share numbers, so a candidate from
	// either side is scored on the other by its slot.
	seen := make(map[uint64]int, len(vecTop)+len(lexTop))
	cands := make([]candidate, 0, len(vecTop)+len(lexTop))
	for _, s := range vecTop {
		id := v.pages.id(s.slot)
		seen[id] = len(cands)
		cands = append(cands, candidate{id: id, slot: s.slot, cos: s.score})
	}
	for _, s := range lexTop {
		id := v.pages.id(s.slot)
		if i, ok := seen[id]; ok {
			cands[i].bm = s.score
			continue
		}
		seen[id] = len(cands)
		c := candidate{id: id, slot: s.slot, bm: s.score}
		if useVec {
			c.cos = v.pages.dot(q.Vector, c.slot)
		}
		cands = append(cands, c)
	}
	if useLex {
		for i := range cands {
			cands[i].bm = lex.score(cands[i].slot)
		}
	}

	var hits []Hit
	switch {
	case !useLex:
		hits = make([]Hit, len(cands))
		for i, c := range cands {
			hits[i] = Hit{ID: c.id, Score: float64(c.cos)}
		}
	case !useVec:
		hits = fuse(cands, 0)
	default:
		wv := vectorWeight(x.model)
		hits = fuse(cands, wv)
		feedback(v, q.Vector, cands, seen, hits)
		hits = fuse(cands, wv)
	}
	if len(hits) > q.K {
		hits = hits[:q.K]
	}
	for i := range hits {
		hits[i].Lang = v.pages.slotLang(cands[seen[hits[i].ID]].slot)
	}
	return hits
}

// fuse combines the two sides as wv·cos/maxCos + (1−wv)·bm/maxBM: each side
// normalised by its best score (theoretical minimum 0, observed maximum),
// which keeps a side's absolute confidence where rank fusion would discard
// it. A side with no positive score drops out. The result is sorted.
func fuse(cands []candidate, wv float64) []Hit {
	var maxCos, maxBM float32
	for _, c := range cands {
		maxCos = max(maxCos, c.cos)
		maxBM = max(maxBM, c.bm)
	}
	switch {
	case maxBM <= 0:
		wv = 1
	case maxCos <= 0:
		wv = 0
	}
	hits := make([]Hit, len(cands))
	for i, c := range cands {
		var score float64
		if wv > 0 && maxCos > 0 {
			score += wv * float64(max(c.cos, 0)/maxCos)
		}
		if wv < 1 && maxBM > 0 {
			score += (1 - wv) * float64(c.bm/maxBM)
		}
		hits[i] = Hit{ID: c.id, Score: score}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return hits
}

// feedback re-scores every candidate's cosine against the query moved
// towards its first-pass top hits (found in cands through seen, ID ->
// index). Candidates stay the same set: the feedback re-ranks, it does not
// search again.
func feedback(v *view, q []float32, cands []candidate, seen map[uint64]int, firstPass []Hit) {
	n := min(feedbackDocs, len(firstPass))
	if n == 0 {
		return
	}
	q2 := slices.Clone(q)
	w := float32(feedbackWeight / float64(n))
	for _, h := range firstPass[:n] {
		vec := v.pages.vec(cands[seen[h.ID]].slot)
		for j := range q2 {
			q2[j] += w * vec[j]
		}
	}
	// q2 is not unit length; every cosine is scaled alike, and fusion
	// divides by the maximum, so normalising would change nothing.
	for i := range cands {
		cands[i].cos = v.pages.dot(q2, cands[i].slot)
	}
}
