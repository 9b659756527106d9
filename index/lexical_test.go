package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/docsift/docsift/analysis"
)

func TestBM25HandExample(t *testing.T) {
	// Three docs, query "apple", k1=0.9, b=0.4. N=3, df=2, avgdl=7/3.
	// idf = ln(1 + (3-2+0.5)/(2+0.5)) = ln 1.6
	// d1 (tf 1, len 2): idf·1·1.9/(1 + 0.9·(0.6+0.4·2/(7/3)))
	// d2 (tf 2, len 3): idf·2·1.9/(2 + 0.9·(0.6+0.4·3/(7/3)))
	if bm25K1 != 0.9 || bm25B != 0.4 {
		t.Fatal("hand example assumes k1=0.9, b=0.4")
	}
	// Pairs are left out here; TestPairsRewardAdjacency covers them.
	l := newLexicalIndex()
	for id, text := range []string{"apple banana", "apple apple cherry", "cherry date"} {
		c, n := countTerms(analysis.Terms(text))
		l.add(uint64(id+1), c, n)
	}
	q, _ := countTerms(analysis.Terms("apple"))
	s := l.scoreAll(q)
	defer s.release()
	idf := math.Log(1.6)
	want := map[uint64]float64{
		1: idf * 1.9 / (1 + 0.9*(0.6+0.4*2/(7.0/3))),
		2: idf * 2 * 1.9 / (2 + 0.9*(0.6+0.4*3/(7.0/3))),
	}
	top := s.top(10)
	if len(top) != 2 {
		t.Fatalf("%d matches, want 2", len(top))
	}
	if l.docID[top[0].slot] != 2 {
		t.Fatalf("doc %d first, want 2", l.docID[top[0].slot])
	}
	for _, h := range top {
		id := l.docID[h.slot]
		if math.Abs(float64(h.score)-want[id]) > 1e-5 {
			t.Errorf("doc %d: score %.6f, want %.6f", id, h.score, want[id])
		}
	}
	// Deleting doc 3 changes N and avgdl; scores follow.
	l.remove(3)
	s2 := l.scoreAll(q)
	defer s2.release()
	// N=2, df=2: idf = ln(1 + 0.5/2.5); avgdl = 2.5
	idf2 := math.Log(1.2)
	want1 := idf2 * 1.9 / (1 + 0.9*(0.6+0.4*2/2.5))
	if got := s2.score[l.docOf[1]]; math.Abs(float64(got)-want1) > 1e-5 {
		t.Errorf("after delete: doc 1 score %.6f, want %.6f", got, want1)
	}
}

func TestLexicalCompactionKeepsScores(t *testing.T) {
	l := newLexicalIndex()
	ref := newLexicalIndex()
	for i := range 1000 {
		c, n := countTerms(analysis.Terms("alpha beta gamma delta"[:5+i%15]))
		l.add(uint64(i), c, n)
		if i%2 == 1 {
			ref.add(uint64(i), c, n)
		}
	}
	for i := 0; i < 1000; i += 2 {
		l.remove(uint64(i))
	}
	if len(l.docID) == 1000 {
		t.Fatal("no compaction happened")
	}
	q, _ := countTerms(analysis.Terms("beta gamma"))
	a, b := l.scoreAll(q), ref.scoreAll(q)
	defer a.release()
	defer b.release()
	for id, d := range ref.docOf {
		if a.score[l.docOf[id]] != b.score[d] {
			t.Fatalf("doc %d: %v vs %v", id, a.score[l.docOf[id]], b.score[d])
		}
	}
}

func TestPairsRewardAdjacency(t *testing.T) {
	l := newLexicalIndex()
	for id, text := range []string{"solar panel cleaning guide", "panel on solar energy cleaning guide"} {
		c, n := countTerms(withPairs(analysis.Terms(text)))
		l.add(uint64(id), c, n)
	}
	if l.docLen[0] != 4 {
		t.Fatalf("doc length %d counts pairs", l.docLen[0])
	}
	q, _ := countTerms(withPairs(analysis.Terms("solar panel")))
	s := l.scoreAll(q)
	defer s.release()
	if s.score[l.docOf[0]] <= s.score[l.docOf[1]] {
		t.Fatalf("adjacent words not preferred: %v vs %v", s.score[l.docOf[0]], s.score[l.docOf[1]])
	}
}

func BenchmarkLexicalScore(b *testing.B) {
	// 50k synthetic chunks over a Zipf-like vocabulary, scored for a
	// three-word query: the lexical half of a hybrid search.
	l := newLexicalIndex()
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(words)-1))
	for id := range 50000 {
		terms := make([]string, 60)
		for i := range terms {
			terms[i] = words[zipf.Uint64()]
		}
		c, n := countTerms(withPairs(terms))
		l.add(uint64(id), c, n)
	}
	q, _ := countTerms(withPairs([]string{"w3", "w40", "w700"}))
	for b.Loop() {
		s := l.scoreAll(q)
		s.top(minCandidates)
		s.release()
	}
}
