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
	es, zipf := namedSyntheticEntries(rng, 6000, 4)
	x := snapshotThenAdd(t, es, 4000)
	checkPruned(t, x, rng, zipf, "")
	for i := 1; i <= 6000; i += 3 {
		x.Delete(uint64(i))
	}
	checkPruned(t, x, rng, zipf, "after deletes: ")
	// Deleted docs skipped in every list (see view.skipped), not only of
	// long ones.
	x.tuning.skipCost = 0
	checkPruned(t, x, rng, zipf, "after deletes, skipped in every list: ")
	x.tuning.skipCost = defaultSkipCost

	// An owner of two languages: a term counts only in its languages'
	// docs, for its IDF as for scores.
	german := "die katzen schlafen den ganzen tag auf dem sofa und spielen nachts im garten"
	for i := range es {
		if i%7 == 0 {
			es[i].Text = german + " " + es[i].Text[:40]
		}
	}
	y := testOpts.New("m", 8)
	must(t, y.Add(es...))
	if p := y.current.Load().lex.present(); p&(p-1) == 0 {
		t.Fatalf("one language among the docs (%b), two wanted", p)
	}
	checkPruned(t, y, rng, zipf, "two languages: ")
	for i := 2; i <= 6000; i += 5 {
		y.Delete(uint64(i))
	}
	checkPruned(t, y, rng, zipf, "two languages, after deletes: ")
	y.tuning.skipCost = 0
	checkPruned(t, y, rng, zipf, "two languages, after deletes, skipped in every list: ")
}

func checkPruned(t *testing.T, x *OwnerIndex, rng *rand.Rand, zipf *rand.Zipf, stage string) {
	t.Helper()
	v := x.current.Load()
	pruned := 0
	const queries = 300
	for q := range queries {
		text := syntheticWords(zipf, 1+q%5)
		terms := v.queryTerms(text)
		if q%4 == 0 {
			// As if only the dominant language's analysis gave the
			// terms: the other language's docs holding the same
			// strings do not count.
			for i := range terms {
				terms[i].langs = 1 << v.lex.dominant()
			}
		}
		k := []int{1, 10, minCandidates}[q%3]
		got := v.lexical(terms, k, nil)
		want := v.scoreAll(terms)
		wantTop := want.top(k)
		if got.all == nil {
			pruned++
		}
		if len(got.top) != len(wantTop) {
			t.Fatalf("%s%q top %d: %d docs, exhaustive %d", stage, text, k, len(got.top), len(wantTop))
		}
		for i := range wantTop {
			if got.top[i].slot != wantTop[i].slot || math.Float32bits(got.top[i].score) != math.Float32bits(wantTop[i].score) {
				t.Fatalf("%s%q top %d: #%d is slot %d (%v), exhaustive slot %d (%v)", stage, text, k, i, got.top[i].slot, got.top[i].score, wantTop[i].slot, wantTop[i].score)
			}
		}
		for range 50 {
			d := uint32(rng.IntN(int(v.n)))
			if g, w := got.score(d), want.score[d]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%s%q: slot %d scored %v, exhaustive %v", stage, text, d, g, w)
			}
		}
		got.release()
		want.release()
	}
	t.Logf("%s%d of %d queries pruned", stage, pruned, queries)
	if pruned < queries/3 {
		t.Errorf("%sonly %d of %d queries pruned", stage, pruned, queries)
	}
}
