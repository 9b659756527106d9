package index

import (
	"math"
	"sync"
)

// BM25 parameters. docsift scores chunks, not whole documents: chunks are
// cut to a similar size, so length says little about topicality and b is
// lower than the classic 0.75; k1 saturates repeated words sooner, as short
// passages need. These are the values Anserini settled on for passage
// collections (k1=0.9, b=0.4), fixed rather than tuned per owner.
const (
	bm25K1 = 0.9
	bm25B  = 0.4
)

// lexCompactMinDead is the fewest dead docs worth a compaction pass; below
// it the skipped postings cost less than rewriting every list.
const lexCompactMinDead = 256

// lexicalIndex is an inverted index scored with BM25 (Okapi, with Lucene's
// non-negative IDF). Postings of deleted docs stay in place, skipped at query
// time, until they are a third of all docs; then every list is rewritten.
// That keeps a delete O(1) instead of O(postings of every term of the doc).
type lexicalIndex struct {
	termID   map[string]uint32
	terms    []string    // term ID -> term
	postings [][]posting // term ID -> docs containing it

	docID    []uint64 // doc number -> entry ID
	docLen   []uint32 // doc number -> number of terms
	docDead  []bool
	docOf    map[uint64]uint32
	nDead    int
	totalLen uint64 // sum of live docLen
}

type posting struct {
	doc uint32
	tf  uint32
}

// termCount is one distinct term of a doc or query with its frequency.
type termCount struct {
	term string
	tf   uint32
}

// pairPrefix marks an indexed pair of adjacent terms. The byte cannot occur
// in an analysed term, so a pair never collides with a word.
const pairPrefix = "\x01"

// pairWeight scales the BM25 of adjacent-term pairs against single terms.
// Pairs are the ordered-window part of the sequential dependence model
// (Metzler & Croft, 2005): a query's words appearing side by side in a
// chunk is evidence a bag of words cannot see. The pair also counts through
// its two words, so its own weight stays small.
const pairWeight = 0.2

// withPairs returns terms followed by every adjacent pair as a term of its
// own. Pairs are not counted in a doc's length: length normalisation is
// about how much text there is, which the words already measure.
func withPairs(terms []string) []string {
	if len(terms) < 2 {
		return terms
	}
	out := make([]string, len(terms), 2*len(terms)-1)
	copy(out, terms)
	for i := 1; i < len(terms); i++ {
		out = append(out, pairPrefix+terms[i-1]+" "+terms[i])
	}
	return out
}

func isPair(term string) bool { return len(term) > 0 && term[0] == pairPrefix[0] }

func newLexicalIndex() *lexicalIndex {
	return &lexicalIndex{termID: make(map[string]uint32), docOf: make(map[uint64]uint32)}
}

// countTerms turns analysed terms into distinct terms with frequencies, in
// first-seen order. It is called outside the index lock: analysis is the
// expensive part of adding text.
func countTerms(terms []string) (counts []termCount, length uint32) {
	pos := make(map[string]int, len(terms))
	for _, t := range terms {
		if !isPair(t) {
			length++
		}
		if i, ok := pos[t]; ok {
			counts[i].tf++
			continue
		}
		pos[t] = len(counts)
		counts = append(counts, termCount{t, 1})
	}
	return counts, length
}

func (l *lexicalIndex) live() int { return len(l.docID) - l.nDead }

// add indexes a doc under id, replacing any previous doc of id.
func (l *lexicalIndex) add(id uint64, counts []termCount, length uint32) {
	l.remove(id)
	d := uint32(len(l.docID))
	l.docID = append(l.docID, id)
	l.docLen = append(l.docLen, length)
	l.docDead = append(l.docDead, false)
	l.docOf[id] = d
	l.totalLen += uint64(length)
	for _, c := range counts {
		t, ok := l.termID[c.term]
		if !ok {
			t = uint32(len(l.terms))
			l.termID[c.term] = t
			l.terms = append(l.terms, c.term)
			l.postings = append(l.postings, nil)
		}
		l.postings[t] = append(l.postings[t], posting{d, c.tf})
	}
}

// remove deletes id's doc from results; it reports whether id was present.
func (l *lexicalIndex) remove(id uint64) bool {
	d, ok := l.docOf[id]
	if !ok {
		return false
	}
	delete(l.docOf, id)
	l.docDead[d] = true
	l.nDead++
	l.totalLen -= uint64(l.docLen[d])
	if l.nDead >= lexCompactMinDead && l.nDead*3 >= len(l.docID) {
		l.compact()
	}
	return true
}

// compact renumbers the live docs densely and drops dead postings and terms
// that no live doc uses any more.
func (l *lexicalIndex) compact() {
	renum := make([]uint32, len(l.docID))
	var ids []uint64
	var lens []uint32
	for d, id := range l.docID {
		if l.docDead[d] {
			continue
		}
		renum[d] = uint32(len(ids))
		ids = append(ids, id)
		lens = append(lens, l.docLen[d])
	}
	termID := make(map[string]uint32, len(l.terms))
	var terms []string
	var postings [][]posting
	for t, ps := range l.postings {
		var kept []posting
		for _, p := range ps {
			if !l.docDead[p.doc] {
				kept = append(kept, posting{renum[p.doc], p.tf})
			}
		}
		if len(kept) == 0 {
			continue
		}
		termID[l.terms[t]] = uint32(len(terms))
		terms = append(terms, l.terms[t])
		postings = append(postings, kept)
	}
	l.termID, l.terms, l.postings = termID, terms, postings
	l.docID, l.docLen = ids, lens
	l.docDead = make([]bool, len(ids))
	l.docOf = make(map[uint64]uint32, len(ids))
	for d, id := range ids {
		l.docOf[id] = uint32(d)
	}
	l.nDead = 0
}

// lexScores is the BM25 score of every doc matching a query, kept dense so
// that fusion can look up any candidate's exact score, not only the top ones.
type lexScores struct {
	score   []float32 // doc number -> score; valid for docs in matched
	matched []uint32
}

var lexScoresPool = sync.Pool{New: func() any { return new(lexScores) }}

func (s *lexScores) release() {
	for _, d := range s.matched {
		s.score[d] = 0
	}
	s.matched = s.matched[:0]
	lexScoresPool.Put(s)
}

// scoreAll computes BM25 for every live doc containing a query term. Query
// terms repeated in the query count once per occurrence, as in classic BM25.
func (l *lexicalIndex) scoreAll(query []termCount) *lexScores {
	s := lexScoresPool.Get().(*lexScores)
	if cap(s.score) < len(l.docID) {
		s.score = make([]float32, len(l.docID))
	}
	s.score = s.score[:len(l.docID)]
	n := l.live()
	if n == 0 {
		return s
	}
	avgLen := float64(l.totalLen) / float64(n)
	if avgLen == 0 {
		avgLen = 1
	}
	for _, q := range query {
		t, ok := l.termID[q.term]
		if !ok {
			continue
		}
		ps := l.postings[t]
		df := len(ps)
		if l.nDead > 0 {
			df = 0
			for _, p := range ps {
				if !l.docDead[p.doc] {
					df++
				}
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
		w := float64(q.tf) * idf
		if isPair(q.term) {
			w *= pairWeight
		}
		for _, p := range ps {
			if l.docDead[p.doc] {
				continue
			}
			tf := float64(p.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(l.docLen[p.doc])/avgLen)
			if s.score[p.doc] == 0 {
				s.matched = append(s.matched, p.doc)
			}
			s.score[p.doc] += float32(w * tf * (bm25K1 + 1) / (tf + norm))
		}
	}
	return s
}

// top returns the k best docs of s.
func (s *lexScores) top(k int) []scored {
	if k <= 0 {
		return nil
	}
	t := newTopK(k)
	for _, d := range s.matched {
		t.push(d, s.score[d])
	}
	return t.sorted()
}
