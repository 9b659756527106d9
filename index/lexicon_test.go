package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docsift/docsift/analysis"
)

// TestTermTableFilledInAnotherOrder fills a lexicon in the table order of
// another, as compacting does, and checks the runs of
// occupied slots in each table just before it grows: placed by the key's
// low bits alone, those terms piled into runs of many thousands, which
// every insert then walked (loading a snapshot took minutes).
func TestTermTableFilledInAnotherOrder(t *testing.T) {
	const terms = 300000
	a := newLexicon()
	for i := range terms {
		a.termFor(keyOf(fmt.Sprintf("term%d", i)))
	}
	b := newLexicon()
	table := b.table.Load()
	longest := 0
	a.each(func(k termKey, _, _ []posting) {
		b.termFor(k)
		if next := b.table.Load(); next != table {
			longest = max(longest, longestRun(table))
			table = next
		}
	})
	// Random placement at 3/4 full gives runs of a few hundred at most.
	if longest > 1000 {
		t.Errorf("a run of %d occupied slots", longest)
	}
	for i := range table.slots {
		if e := table.slots[i].Load(); e != nil && table.findKey(e.key) != e {
			t.Fatalf("term %x not found where it was put", e.key)
		}
	}
}

func longestRun(t *termTable) int {
	longest, run := 0, 0
	for i := range t.slots {
		if t.slots[i].Load() == nil {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

// TestPostingsGrowInPlaceOfSearches stages postings past every capacity
// step of postingsCap and checks, at each publish, that what a search
// reads is exactly what was published.
func TestPostingsGrowInPlaceOfSearches(t *testing.T) {
	l := newLexicon()
	tp := l.termFor(keyOf("word"))
	const n = 5000
	for i := range uint32(n) {
		l.stage(tp, posting{doc: i, tf: i%7 + 1})
		if got := tp.upTo(n); uint32(len(got)) != i {
			t.Fatalf("before publishing posting %d a search reads %d", i, len(got))
		}
		l.flush()
		got := tp.upTo(n)
		if uint32(len(got)) != i+1 || got[i] != (posting{doc: i, tf: i%7 + 1}) || got[0] != (posting{0, 1}) {
			t.Fatalf("after publishing posting %d a search reads %d postings ending %v", i, len(got), got[len(got)-1])
		}
	}
	if got := tp.upTo(100); len(got) != 100 {
		t.Errorf("postings below slot 100: %d", len(got))
	}
	for _, c := range []struct{ n, want uint32 }{{0, 1}, {1, 1}, {2, 2}, {3, 4}, {512, 512}, {513, 1024}, {1025, 1536}, {3585, 4608}} {
		if got := postingsCap(c.n); got != c.want {
			t.Errorf("postingsCap(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestStageMergesOneSlotsPostings stages two postings of one slot, as two
// terms of a chunk whose keys collide would, and checks that the list
// stays one posting per slot, in order, with both frequencies.
func TestStageMergesOneSlotsPostings(t *testing.T) {
	l := newLexicon()
	tp := l.termFor(keyOf("word"))
	for _, p := range []posting{{1, 1}, {5, 1}, {5, 2}, {6, 1}} {
		l.stage(tp, p)
	}
	l.flush()
	want := []posting{{1, 1}, {5, 3}, {6, 1}}
	if got := tp.upTo(10); !slices.Equal(got, want) {
		t.Errorf("postings %v, want %v", got, want)
	}
}

// TestSearchKeys checks searchKeys against slices.BinarySearch, position
// and all, for keys spread as term keys are, for keys bunched at one end
// (where interpolation guesses badly and must fall back), and for the
// smallest sets.
func TestSearchKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string][]uint64{"empty": nil, "one": {42}}
	for _, n := range []int{2, 17, 1000, 100000} {
		even := make([]uint64, n)
		bunched := make([]uint64, n)
		for i := range even {
			even[i] = rng.Uint64()
			// Most keys near zero, a few spread over the rest.
			bunched[i] = rng.Uint64() >> (rng.IntN(4) * 20)
		}
		slices.Sort(even)
		slices.Sort(bunched)
		sets[fmt.Sprintf("even %d", n)] = slices.Compact(even)
		sets[fmt.Sprintf("bunched %d", n)] = slices.Compact(bunched)
	}
	for name, keys := range sets {
		probes := []uint64{0, 1, ^uint64(0), ^uint64(0) - 1}
		for _, k := range keys {
			probes = append(probes, k, k-1, k+1)
		}
		for range 1000 {
			probes = append(probes, rng.Uint64(), rng.Uint64()>>40)
		}
		for _, k := range probes {
			wantAt, want := slices.BinarySearch(keys, k)
			at, found := searchKeys(keys, k)
			if at != wantAt || found != want {
				t.Fatalf("%s: key %x at %d (found %v), want %d (%v)", name, k, at, found, wantAt, want)
			}
		}
	}
}

// BenchmarkFrozenFind looks keys up among 32 million, as many as a
// million-chunk owner's lexicon holds (its words and word pairs), half of
// them present: by searchKeys and by halving.
func BenchmarkFrozenFind(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 32<<20)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	slices.Sort(keys)
	probes := make([]uint64, 1<<16)
	for i := range probes {
		if i%2 == 0 {
			probes[i] = keys[rng.IntN(len(keys))]
		} else {
			probes[i] = rng.Uint64()
		}
	}
	for _, c := range []struct {
		name   string
		search func([]uint64, uint64) (int, bool)
	}{{"interpolation", searchKeys}, {"halving", slices.BinarySearch[[]uint64]}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				c.search(keys, probes[i%len(probes)])
				i++
			}
		})
	}
}

// TestDocTermsKeyAsQueryTerms checks that an entry's terms, keyed as they
// are analysed (docTerms), have the keys of the strings a query's terms
// are analysed into (pairing): a word pair of a query finds the same pair in a
// chunk only so. Body and head, words, pairs and compounds' joined forms.
func TestDocTermsKeyAsQueryTerms(t *testing.T) {
	texts := []string{
		"The worker claims the job and extracts per-page text; read-only files stay.",
		"Die Steuererklärungsfrist endet am 31. Juli.",
		"東京都の天気は晴れです。", "", "one",
	}
	for _, prefix := range []string{"", headPrefix} {
		for _, text := range texts {
			var words pairing
			keyed := docTerms{prefix: prefix}
			words.prefix = prefix
			lang, _ := analysis.Detect(text)
			analysis.Analyze(text, lang, func(t analysis.Term) {
				words.add(t)
				keyed.add(t)
			})
			want := make([]termKey, len(words.terms))
			for i, w := range words.terms {
				want[i] = keyOf(w)
			}
			if !slices.Equal(keyed.keys, want) || keyed.length != words.length {
				t.Errorf("prefix %q, %q: keys %x (length %d), want those of %q (%d)", prefix, text, keyed.keys, keyed.length, words.terms, words.length)
			}
		}
	}
}
