package index

import (
	"fmt"
	"path/filepath"
	"testing"
)

// graphIndex returns an index over vecs (IDs 0..n-1) that searches through
// the HNSW graph whatever its size.
func graphIndex(t testing.TB, vecs [][]float32, dim int) *OwnerIndex {
	t.Helper()
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	if err := x.Add(entries(vecs, 0)...); err != nil {
		t.Fatal(err)
	}
	return x
}

func recallAt10(x *OwnerIndex, vecs, queries [][]float32, live func(int) bool) float64 {
	found, total := 0, 0
	for _, q := range queries {
		want := bruteForce(vecs, live, q, 10)
		got := map[uint64]bool{}
		for _, h := range x.Search(Query{Vector: q, K: 10}) {
			got[h.ID] = true
		}
		for _, w := range want {
			if got[uint64(w)] {
				found++
			}
		}
		total += len(want)
	}
	return float64(found) / float64(total)
}

func TestHNSWRecall(t *testing.T) {
	const dim = 64
	// Queries come from the same clusters as the data, as real queries do.
	all := testVectors(5200, dim, 10)
	vecs, queries := all[:5000], all[5000:]
	x := graphIndex(t, vecs, dim)
	if x.gen.graph == nil {
		t.Fatal("not a graph")
	}
	if r := recallAt10(x, vecs, queries, func(int) bool { return true }); r < 0.95 {
		t.Fatalf("recall@10 %.3f < 0.95", r)
	}
}

func TestHNSWLinksWithinBounds(t *testing.T) {
	vecs := testVectors(3000, 16, 12)
	x := graphIndex(t, vecs, 16)
	ps := x.gen.pages
	for s := range x.gen.n {
		for layer := 0; layer <= ps.level(s); layer++ {
			l := ps.links(s, layer)
			maxN := hnswM
			if layer == 0 {
				maxN = hnswM0
			}
			if int(l[0]) > maxN || (len(vecs) > 1 && layer == 0 && l[0] == 0) {
				t.Fatalf("node %d layer %d: %d links", s, layer, l[0])
			}
			for _, nb := range l[1 : 1+l[0]] {
				if nb == s || ps.level(nb) < layer {
					t.Fatalf("node %d layer %d: bad link to %d", s, layer, nb)
				}
			}
		}
	}
}

func TestHNSWDeletes(t *testing.T) {
	const dim = 32
	all := testVectors(4100, dim, 13)
	vecs, queries := all[:4000], all[4000:]
	x := graphIndex(t, vecs, dim)
	// Delete a third: below the compaction point, so the graph searches
	// through tombstones.
	var dead []uint64
	for i := 0; i < len(vecs); i += 3 {
		dead = append(dead, uint64(i))
	}
	x.Delete(dead...)
	if x.gen.graph == nil || x.dead == 0 {
		t.Fatal("expected tombstones in the graph")
	}
	live := func(i int) bool { return i%3 != 0 }
	for _, q := range queries {
		for _, h := range x.Search(Query{Vector: q, K: 10}) {
			if h.ID%3 == 0 {
				t.Fatalf("deleted %d returned", h.ID)
			}
		}
	}
	if r := recallAt10(x, vecs, queries, live); r < 0.95 {
		t.Fatalf("recall with tombstones %.3f", r)
	}
	// Delete past half: compaction drops the tombstones.
	for i := 1; i < len(vecs); i += 3 {
		dead = append(dead, uint64(i))
	}
	x.Delete(dead...)
	if x.dead != 0 || x.Len() != int(x.gen.n) {
		t.Fatalf("no compaction: %d dead of %d", x.dead, x.gen.n)
	}
	for _, q := range queries {
		for _, h := range x.Search(Query{Vector: q, K: 10}) {
			if h.ID%3 != 2 {
				t.Fatalf("deleted %d returned after compaction", h.ID)
			}
		}
	}
}

func TestGraphThreshold(t *testing.T) {
	const dim = 8
	x := testOpts.New("m", dim)
	must(t, x.Add(entries(testVectors(graphThreshold-1, dim, 15), 0)...))
	if x.gen.graph != nil {
		t.Fatal("small owner should scan")
	}
	must(t, x.Add(entries(testVectors(10, dim, 16), graphThreshold)...))
	if x.gen.graph == nil {
		t.Fatal("owner past the threshold should use the graph")
	}
}

func TestHNSWSnapshotRoundTrip(t *testing.T) {
	const dim = 16
	vecs := testVectors(2000, dim, 17)
	x := graphIndex(t, vecs, dim)
	x.Delete(5, 6, 7)
	path := filepath.Join(t.TempDir(), "g.idx")
	must(t, x.WriteSnapshot(path, 9))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if y.gen.graph == nil {
		t.Fatal("graph not restored")
	}
	for i, q := range testVectors(50, dim, 18) {
		a, b := x.Search(Query{Vector: q, K: 10}), y.Search(Query{Vector: q, K: 10})
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("query %d differs after reload", i)
		}
	}
	// The loaded graph accepts inserts.
	more := testVectors(100, dim, 19)
	must(t, y.Add(entries(more, 5000)...))
	if hits := y.Search(Query{Vector: more[0], K: 1}); len(hits) != 1 || hits[0].ID != 5000 {
		t.Fatalf("new vector not found first: %v", hits)
	}
}

func TestHNSWConcurrentAddSearch(t *testing.T) {
	const dim = 16
	vecs := testVectors(2000, dim, 20)
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(vecs); i += 100 {
			if err := x.Add(entries(vecs[i:i+100], uint64(i))...); err != nil {
				t.Error(err) // not Fatal: this is not the test goroutine
				return
			}
			x.Delete(uint64(i + 1))
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			if x.Len() != len(vecs)-len(vecs)/100 {
				t.Fatalf("Len %d", x.Len())
			}
			return
		default:
		}
		checkHits(t, x.Search(Query{Vector: vecs[i%len(vecs)], K: 5}))
	}
}

func TestEfConstructionByModel(t *testing.T) {
	// Options.EfConstruction replaces a learned model's list only.
	for _, c := range []struct {
		opts           Options
		builtin, other int
	}{
		{Options{}, hnswEfConstruction, hnswEfConstructionLearned},
		{testOpts, hnswEfConstruction, testLearnedEfConstruction},
	} {
		for model, want := range map[string]int{"builtin-v2": c.builtin, "nomic-embed-text": c.other} {
			x := c.opts.New(model, 8)
			x.graphFrom = 0
			must(t, x.Add(entries(testVectors(300, 8, 21), 0)...))
			if got := x.gen.graph.efConstruction; got != want {
				t.Errorf("%s, %+v: graph built with efConstruction %d, want %d", model, c.opts, got, want)
			}
			// A graph loaded from a snapshot goes on inserting the same way.
			path := filepath.Join(t.TempDir(), "g.idx")
			must(t, x.WriteSnapshot(path, 1))
			y, _, err := c.opts.ReadSnapshot(path)
			must(t, err)
			if got := y.gen.graph.efConstruction; got != want {
				t.Errorf("%s, %+v: loaded graph inserts with efConstruction %d, want %d", model, c.opts, got, want)
			}
		}
	}
}

func TestEfSearchGrowsWithGraph(t *testing.T) {
	if got := efSearchFor(1); got != hnswEfSearch {
		t.Errorf("one node: ef %d, want %d", got, hnswEfSearch)
	}
	if got := efSearchFor(efSearchGrowFrom); got != hnswEfSearch {
		t.Errorf("%d nodes: ef %d, want %d", efSearchGrowFrom, got, hnswEfSearch)
	}
	if got := efSearchFor(1_000_000); got != 3*hnswEfSearch {
		t.Errorf("a million nodes: ef %d, want %d", got, 3*hnswEfSearch)
	}
	prev := 0
	for n := uint32(50_000); n <= 5_000_000; n += 50_000 {
		ef := efSearchFor(n)
		if ef < prev {
			t.Fatalf("ef shrinks from %d to %d at %d nodes", prev, ef, n)
		}
		prev = ef
	}
}
