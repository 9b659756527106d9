package index

import (
	"math"
	"testing"

	"github.com/docsift/docsift/analysis"
)

func TestBM25HandExample(t *testing.T) {
	// Three docs, query "apple". N=3, df=2, avgdl=7/3.
	// idf = ln(1 + (3-2+0.5)/(2+0.5)) = ln 1.6
	// d1 (tf 1, len 2): idf·1·2.2/(1 + 1.2·(0.25+0.75·2/(7/3)))
	// d2 (tf 2, len 3): idf·2·2.2/(2 + 1.2·(0.25+0.75·3/(7/3)))
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
		1: idf * 2.2 / (1 + 1.2*(0.25+0.75*2/(7.0/3))),
		2: idf * 2 * 2.2 / (2 + 1.2*(0.25+0.75*3/(7.0/3))),
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
	want1 := idf2 * 2.2 / (1 + 1.2*(0.25+0.75*2/2.5))
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
