package index

import (
	"fmt"
	"slices"
	"testing"
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
