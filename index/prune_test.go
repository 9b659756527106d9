package index

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPrunedLexicalMatchesExhaustive checks that the lexical side of a
// search gives the pool and the scores exhaustive scoring gives, to the
// bit, for queries mixing common and rare words over names and texts,
// and that it pruned most of them (else the check proves nothing).
func TestPrunedLexicalMatchesExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	es := syntheticEntries(rng, 1, 6000, 8)
	zipf := rand.NewZipf(rng, 1.1, 1, syntheticVocabulary-1)
	for i := range es {
		if i%4 == 0 {
			es[i].Name = syntheticWords(zipf, 2) + ".txt"
		}
	}
	x := New("m", 8)
	must(t, x.Add(es[:4000]...))
	must(t, x.Add(es[4000:]...)) // postings in the base and added since
	v := x.current.Load()
	pruned := 0
	const queries = 300
	for q := range queries {
		text := syntheticWords(zipf, 1+q%5)
		terms := v.queryTerms(text)
		k := []int{1, 10, minCandidates}[q%3]
		got := v.lexical(terms, k, nil)
		want := v.scoreAll(terms)
		wantTop := want.top(k)
		if got.all == nil {
			pruned++
		}
		if len(got.top) != len(wantTop) {
			t.Fatalf("%q top %d: %d docs, exhaustive %d", text, k, len(got.top), len(wantTop))
		}
		for i := range wantTop {
			if got.top[i].slot != wantTop[i].slot || math.Float32bits(got.top[i].score) != math.Float32bits(wantTop[i].score) {
				t.Fatalf("%q top %d: #%d is slot %d (%v), exhaustive slot %d (%v)", text, k, i, got.top[i].slot, got.top[i].score, wantTop[i].slot, wantTop[i].score)
			}
		}
		for range 50 {
			d := uint32(rng.IntN(int(v.n)))
			if g, w := got.score(d), want.score[d]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%q: slot %d scored %v, exhaustive %v", text, d, g, w)
			}
		}
		got.release()
		want.release()
	}
	t.Logf("%d of %d queries pruned", pruned, queries)
	if pruned < queries/3 {
		t.Errorf("only %d of %d queries pruned", pruned, queries)
	}
}
