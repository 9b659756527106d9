package index

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestZeroVectorsStayOutOfTheGraph: chunks indexed before their vectors
// exist carry zero vectors; they are found by their words, and the graph
// neither links them nor links to them, on insert or on rebuild.
func TestZeroVectorsStayOutOfTheGraph(t *testing.T) {
	const dim = 8
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	must(t, x.Add(textEntries(1, 200, dim, "filler")...))
	waiting := make([]Entry, 50)
	for i := range waiting {
		waiting[i] = Entry{ID: uint64(1000 + i), Vector: make([]float32, dim), Text: fmt.Sprintf("walrus waiting %d", i)}
	}
	must(t, x.Add(waiting...))
	check := func(when string) {
		t.Helper()
		gen := x.gen
		zero := map[uint32]bool{}
		for _, e := range waiting {
			zero[x.slotOf[e.ID]] = true
		}
		sc := gen.scope()
		for s := range gen.n {
			for layer := 0; layer <= gen.pages.level(s); layer++ {
				l := sc.pages.links(s, layer)
				for _, n := range l[1 : 1+l[0]] { // l[0] counts the links
					if zero[s] || zero[n] {
						t.Fatalf("%s: slot %d links to %d on layer %d; zero-vector slots must stay out of the graph", when, s, n, layer)
					}
				}
			}
		}
		if got := x.Search(Query{Text: "walrus", K: 100}); len(got) != len(waiting) {
			t.Fatalf("%s: a search by words found %d of the %d waiting chunks", when, len(got), len(waiting))
		}
	}
	check("after insert")
	x.mu.Lock()
	x.rebuild()
	x.mu.Unlock()
	check("after rebuild")
}

// TestWithoutVector lists exactly the entries added with a zero vector,
// in the heap and once read in place from a snapshot.
func TestWithoutVector(t *testing.T) {
	x := testOpts.New("m", 4)
	must(t, x.Add(Entry{ID: 1, Vector: []float32{1, 0, 0, 0}, Text: "a"}, Entry{ID: 2, Vector: make([]float32, 4), Text: "b"}, Entry{ID: 3, Vector: make([]float32, 4), Text: "c"}))
	x.Delete(3)
	check := func(when string) {
		if got := x.WithoutVector(); len(got) != 1 || got[0] != 2 {
			t.Errorf("%s: without vector %v, want [2]", when, got)
		}
	}
	check("in the heap")
	must(t, x.WriteSnapshot(filepath.Join(t.TempDir(), "x.idx"), 1))
	check("read in place")
}
