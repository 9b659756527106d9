package index

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
)

func testVectors(n, dim int, seed uint64) [][]float32 {
	return clusteredVectors(rand.New(rand.NewPCG(seed, 1)), n, dim, 20, 1.0)
}

// bruteForce is the reference: every dot product, sorted.
func bruteForce(vecs [][]float32, live func(int) bool, q []float32, k int) []int {
	type pair struct {
		i int
		s float64
	}
	var all []pair
	for i, v := range vecs {
		if !live(i) {
			continue
		}
		var s float64
		for j := range v {
			s += float64(v[j]) * float64(q[j])
		}
		all = append(all, pair{i, s})
	}
	sort.Slice(all, func(a, b int) bool { return all[a].s > all[b].s })
	var out []int
	for _, p := range all[:min(k, len(all))] {
		out = append(out, p.i)
	}
	return out
}

func entries(vecs [][]float32, firstID uint64) []Entry {
	es := make([]Entry, len(vecs))
	for i, v := range vecs {
		es[i] = Entry{ID: firstID + uint64(i), Vector: v}
	}
	return es
}

func TestExactSearchMatchesBruteForce(t *testing.T) {
	for _, n := range []int{1, 10, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			const dim = 32
			vecs := testVectors(n, dim, 1)
			x := testOpts.New("m", dim)
			if err := x.Add(entries(vecs, 0)...); err != nil {
				t.Fatal(err)
			}
			for qi, q := range testVectors(20, dim, 2) {
				got := x.Search(Query{Vector: q, K: 10})
				want := bruteForce(vecs, func(int) bool { return true }, q, 10)
				if len(got) != len(want) {
					t.Fatalf("query %d: %d hits, want %d", qi, len(got), len(want))
				}
				for i := range want {
					if got[i].ID != uint64(want[i]) {
						t.Fatalf("query %d rank %d: got %d, want %d", qi, i, got[i].ID, want[i])
					}
				}
			}
		})
	}
}

func TestAddValidatesDim(t *testing.T) {
	x := testOpts.New("m", 4)
	err := x.Add(Entry{ID: 1, Vector: []float32{1, 0, 0, 0}}, Entry{ID: 2, Vector: []float32{1}})
	if err == nil {
		t.Fatal("want error for wrong dimension")
	}
	if x.Len() != 0 {
		t.Fatalf("a failed Add changed the index: Len %d", x.Len())
	}
}

// Entries analysed for one index are refused by an index of vectors of
// another length, whole, and added by their own.
func TestAddAnalysedValidatesDim(t *testing.T) {
	x, y := testOpts.New("m", 4), testOpts.New("m", 2)
	a, err := x.Analyse(Entry{ID: 1, Vector: []float32{1, 0, 0, 0}, Text: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := y.Analyse(Entry{ID: 2, Vector: []float32{0, 1}, Text: "beta"})
	if err != nil {
		t.Fatal(err)
	}
	if err := y.AddAnalysed(b, a); err == nil || y.Len() != 0 {
		t.Fatalf("entries of 4 dimensions added to an index of 2: err %v, Len %d", err, y.Len())
	}
	if err := x.AddAnalysed(a); err != nil || x.Len() != 1 {
		t.Fatalf("AddAnalysed: err %v, Len %d", err, x.Len())
	}
	if hits := x.Search(Query{Text: "alpha", K: 1}); len(hits) != 1 || hits[0].ID != 1 {
		t.Fatalf("the analysed entry is not found by its word: %v", hits)
	}
}

// IDs lists exactly the entries, ascending, through replacements,
// deletions, a compaction and a snapshot's reload.
func TestIDsAreTheEntries(t *testing.T) {
	const dim = 8
	vecs := testVectors(400, dim, 3)
	x := testOpts.New("m", dim)
	want := map[uint64]bool{}
	check := func(x *OwnerIndex, when string) {
		t.Helper()
		var ids []uint64
		for id := range want {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if got := x.IDs(); !slices.Equal(got, ids) {
			t.Fatalf("%s: IDs %v, want %v", when, got, ids)
		}
	}
	for i, v := range vecs {
		id := uint64(1000 - i) // added in descending order
		must(t, x.Add(Entry{ID: id, Vector: v}))
		want[id] = true
	}
	must(t, x.Add(Entry{ID: 990, Vector: vecs[0]}, Entry{ID: 5000, Vector: vecs[1]})) // a replacement and a new one
	want[5000] = true
	for id := uint64(600); id < 850; id++ {
		x.Delete(id) // enough to compact
		delete(want, id)
	}
	check(x, "after adds, a replacement and deletes")
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	check(y, "after a reload")
	y.Delete(5000)
	delete(want, 5000)
	check(y, "after a delete on the reloaded index")
}

func TestReplaceAndDelete(t *testing.T) {
	x := testOpts.New("m", 2)
	must(t, x.Add(
		Entry{ID: 1, Vector: []float32{1, 0}, Text: "red apple"},
		Entry{ID: 2, Vector: []float32{0, 1}, Text: "green pear"},
	))
	// Replace 1 with a vector and text pointing elsewhere.
	must(t, x.Add(Entry{ID: 1, Vector: []float32{0, 1}, Text: "yellow banana"}))
	if x.Len() != 2 {
		t.Fatalf("Len %d after replace, want 2", x.Len())
	}
	if hits := x.Search(Query{Text: "apple", K: 5}); len(hits) != 0 {
		t.Fatalf("replaced text still found: %v", hits)
	}
	if hits := x.Search(Query{Text: "banana", K: 5}); len(hits) != 1 || hits[0].ID != 1 {
		t.Fatalf("new text not found: %v", hits)
	}
	x.Delete(2, 99)
	if x.Has(2) || !x.Has(1) || x.Len() != 1 {
		t.Fatalf("after delete: Has(2)=%v Has(1)=%v Len=%d", x.Has(2), x.Has(1), x.Len())
	}
	for _, q := range []Query{{Vector: []float32{0, 1}, K: 5}, {Text: "pear", K: 5}, {Vector: []float32{0, 1}, Text: "green pear", K: 5}} {
		for _, h := range x.Search(q) {
			if h.ID == 2 {
				t.Fatalf("deleted id returned for %+v", q)
			}
		}
	}
	if ids := x.IDs(); len(ids) != 1 || ids[0] != 1 {
		t.Fatalf("IDs %v", ids)
	}
}

func TestDeleteManyCompacts(t *testing.T) {
	const dim = 8
	vecs := testVectors(2000, dim, 3)
	es := entries(vecs, 0)
	for i := range es {
		es[i].Text = fmt.Sprintf("doc%d common", i)
	}
	x := testOpts.New("m", dim)
	must(t, x.Add(es...))
	var dead []uint64
	for i := 0; i < 2000; i += 2 {
		dead = append(dead, uint64(i))
	}
	x.Delete(dead...)
	if x.Len() != 1000 {
		t.Fatalf("Len %d", x.Len())
	}
	hits := x.Search(Query{Text: "common", K: 2000})
	if len(hits) != 1000 {
		t.Fatalf("%d lexical hits, want 1000", len(hits))
	}
	for _, h := range hits {
		if h.ID%2 == 0 {
			t.Fatalf("deleted %d returned", h.ID)
		}
	}
	q := vecs[10]
	got := x.Search(Query{Vector: q, K: 10})
	want := bruteForce(vecs, func(i int) bool { return i%2 == 1 }, q, 10)
	for i := range want {
		if got[i].ID != uint64(want[i]) {
			t.Fatalf("rank %d: got %d want %d", i, got[i].ID, want[i])
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestHybridFusion(t *testing.T) {
	// Doc 1 wins on text, doc 2 on vector, doc 3 is good on both and must
	// come first in the fused ranking.
	x := testOpts.New("m", 2)
	s := float32(math.Sqrt(0.5))
	must(t, x.Add(
		Entry{ID: 1, Vector: []float32{0, 1}, Text: "solar panel solar panel efficiency"},
		Entry{ID: 2, Vector: []float32{1, 0}, Text: "unrelated words here"},
		Entry{ID: 3, Vector: []float32{s + 0.2, s - 0.2}, Text: "solar panel efficiency"},
		Entry{ID: 4, Vector: []float32{-1, 0}, Text: "nothing"},
	))
	hits := x.Search(Query{Vector: []float32{1, 0}, Text: "solar panel efficiency", K: 3})
	if len(hits) != 3 || hits[0].ID != 3 {
		t.Fatalf("fused ranking %v, want id 3 first", hits)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatalf("not sorted: %v", hits)
		}
	}
	// Lexical only (embedder down) and vector only.
	if hits := x.Search(Query{Text: "efficiency", K: 10}); len(hits) != 2 {
		t.Fatalf("lexical only: %v", hits)
	}
	if hits := x.Search(Query{Vector: []float32{1, 0}, K: 1}); len(hits) != 1 || hits[0].ID != 2 {
		t.Fatalf("vector only: %v", hits)
	}
	if hits := x.Search(Query{K: 10}); hits != nil {
		t.Fatalf("empty query: %v", hits)
	}
}

// The built-in embedder's vectors get a narrow walk on the vector side of
// a hybrid search (tuning.hashedWalk), but still a walk: a query whose words no
// chunk holds is answered by its vector, as for any model.
func TestHashedVectorSide(t *testing.T) {
	const dim, n = 32, 3 * graphThreshold / 2
	vecs := testVectors(n, dim, 1)
	for _, model := range []string{"builtin-v2", "learned"} {
		x := testOpts.New(model, dim)
		must(t, x.Add(entries(vecs, 0)...))
		first := 0
		for i := 0; i < n; i += n / 50 {
			hits := x.Search(Query{Vector: vecs[i], Text: "zzqx", K: 10})
			if len(hits) != 10 {
				t.Fatalf("%s, chunk %d's vector: %d hits", model, i, len(hits))
			}
			if hits[0].ID == uint64(i) {
				first++
			}
		}
		if first < 48 {
			t.Errorf("%s: %d of 50 chunks first for their own vector", model, first)
		}
	}
}

func TestConcurrentAddSearch(t *testing.T) {
	const dim = 16
	vecs := testVectors(3000, dim, 4)
	x := testOpts.New("m", dim)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(vecs); i += 2 * 50 {
				end := min(i+50, len(vecs))
				es := entries(vecs[i:end], uint64(i))
				for j := range es {
					es[j].Text = fmt.Sprintf("word%d shared", j)
					if j%5 == 0 {
						// Another language: searches skip its docs
						// in lists the writer appends to.
						es[j].Text = fmt.Sprintf("die katzen spielen im garten word%d shared", j)
					}
				}
				if err := x.Add(es...); err != nil {
					t.Error(err) // not Fatal: this is not the test goroutine
					return
				}
				x.Delete(uint64(i))
			}
		}()
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				q := Query{Vector: vecs[(i*7+r)%len(vecs)], Text: "shared word3", K: 5}
				checkHits(t, x.Search(q))
				x.Len()
			}
		}()
	}
	wg.Wait()
}

func TestSnapshotRoundTrip(t *testing.T) {
	const dim = 16
	vecs := testVectors(300, dim, 5)
	es := entries(vecs, 1000)
	for i := range es {
		es[i].Text = fmt.Sprintf("chunk %d about topic%d", i, i%7)
	}
	x := testOpts.New("builtin-v1", dim)
	must(t, x.Add(es...))
	x.Delete(1000, 1001)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 4242))
	y, seq, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if seq != 4242 || y.Model() != "builtin-v1" || y.Dim() != dim || y.Len() != x.Len() {
		t.Fatalf("got seq %d model %q dim %d len %d", seq, y.Model(), y.Dim(), y.Len())
	}
	for i := range 20 {
		q := Query{Vector: vecs[i*3], Text: fmt.Sprintf("topic%d", i%7), K: 10}
		a, b := x.Search(q), y.Search(q)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("query %d differs after reload:\n%v\n%v", i, a, b)
		}
	}
	// The loaded index keeps working.
	must(t, y.Add(Entry{ID: 1, Vector: vecs[0], Text: "fresh"}))
	y.Delete(1002)
	if !y.Has(1) || y.Has(1002) {
		t.Fatal("loaded index does not accept changes")
	}
}

func TestCorruptSnapshot(t *testing.T) {
	x := testOpts.New("m", 4)
	must(t, x.Add(Entry{ID: 1, Vector: []float32{1, 0, 0, 0}, Text: "hello world"}))
	dir := t.TempDir()
	path := filepath.Join(dir, "good")
	must(t, x.WriteSnapshot(path, 1))
	good, err := os.ReadFile(path)
	must(t, err)

	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x40
	cases := map[string][]byte{
		"empty":     {},
		"garbage":   []byte("not a snapshot at all, just text"),
		"truncated": good[:len(good)-7],
		"half":      good[:len(good)/2],
		"bit flip":  flipped,
		"no crc":    good[:len(good)-4],
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "bad")
			must(t, os.WriteFile(p, b, 0o600))
			if _, _, err := testOpts.ReadSnapshot(p); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("err = %v, want ErrCorruptSnapshot", err)
			}
		})
	}
	if _, _, err := testOpts.ReadSnapshot(filepath.Join(dir, "missing")); err == nil || errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("missing file: err = %v, want a plain not-exist error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

// checkHits fails on results that are unsorted or repeat an ID: what a
// search that raced with a writer would show.
func checkHits(t *testing.T, hits []Hit) {
	t.Helper()
	seen := map[uint64]bool{}
	for i, h := range hits {
		if seen[h.ID] {
			t.Errorf("id %d returned twice", h.ID)
		}
		seen[h.ID] = true
		if i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("hits not sorted: %v", hits)
		}
	}
}
