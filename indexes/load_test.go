package indexes

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/docsift/docsift/index"
)

// seqRange is first, first+1, … last.
func seqRange(first, last uint64) []uint64 {
	var out []uint64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

// committed stores es in src as owner's chunks and commits them to the
// owner's index in r, as ingest does: the store first, then the index.
func committed(t *testing.T, r *Set, src *memSource, owner string, es []index.Entry) {
	t.Helper()
	src.put(owner, es...)
	must(t, r.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
		return es[len(es)-1].ID, x.Add(es...)
	}))
}

// loadedIDs loads owner's index from r and returns the chunks it holds.
func loadedIDs(t *testing.T, r *Set, owner string) []uint64 {
	t.Helper()
	x, err := r.Get(owner)
	must(t, err)
	return x.IDs()
}

// TestLoadCatchesUpWithSource: a restart loads an owner's snapshot and
// brings it to what the store holds: the chunks added after the
// snapshot are added, those deleted after it are dropped, and the
// chunks still without a vector are counted as waiting.
func TestLoadCatchesUpWithSource(t *testing.T) {
	src, dir := newMemSource(), filepath.Join(t.TempDir(), "index")
	r := New(src, dir, "m", func() int { return 2 }, Options{}, quietLog())
	committed(t, r, src, "cus_a", chunkEntries(1, 5, "walrus"))
	must(t, r.SnapshotWhole())

	// Changes the snapshot missed (a crash before the next one).
	src.put("cus_a", chunkEntries(6, 3, "narwhal")...)
	src.put("cus_a", index.Entry{ID: 9, Vector: []float32{0, 0}, Text: "beluga"})
	src.remove("cus_a", 2)

	r = New(src, dir, "m", func() int { return 2 }, Options{}, quietLog())
	if got, want := loadedIDs(t, r, "cus_a"), []uint64{1, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Fatalf("loaded index holds %v, want %v", got, want)
	}
	if n := r.Waiting("cus_a"); n != 1 {
		t.Errorf("%d chunks counted waiting for their vector, want 1", n)
	}
	if n := r.CatchingUp("cus_a"); n != 0 {
		t.Errorf("%d chunks counted catching up after an inline load", n)
	}
	if got := searchOwner(t, r, "cus_a", index.Query{Text: "narwhal", K: 10}); !slices.Equal(got, []uint64{6, 7, 8}) {
		t.Errorf("a search for the chunks added since the snapshot found %v", got)
	}
}

// TestLoadRebuildsUnusableSnapshot: a snapshot that does not read, or
// holds vectors of another model than the owner's, is rebuilt from the
// store, never trusted.
func TestLoadRebuildsUnusableSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, src *memSource, path string)
	}{
		{"corrupt", func(t *testing.T, _ *memSource, path string) {
			must(t, os.WriteFile(path, []byte("not a snapshot"), 0o600))
		}},
		{"another model", func(t *testing.T, src *memSource, _ string) {
			src.setModel("cus_a", "m2", 2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dir := newMemSource(), filepath.Join(t.TempDir(), "index")
			r := New(src, dir, "m", func() int { return 2 }, Options{}, quietLog())
			committed(t, r, src, "cus_a", chunkEntries(1, 4, "walrus"))
			must(t, r.SnapshotWhole())
			tc.spoil(t, src, r.path("cus_a"))
			src.put("cus_a", chunkEntries(5, 2, "walrus")...)

			r = New(src, dir, "m", func() int { return 2 }, Options{}, quietLog())
			x, err := r.Get("cus_a")
			must(t, err)
			if got := x.IDs(); !slices.Equal(got, seqRange(1, 6)) {
				t.Fatalf("rebuilt index holds %v, want 1-6", got)
			}
			if want, _ := src.OwnerModel("cus_a"); want != nil && x.Model() != want.Model {
				t.Errorf("rebuilt index of model %s, want the owner's %s", x.Model(), want.Model)
			}
		})
	}
}

// TestLoadSearchableWhileCatchingUp: an owner whose snapshot lacks more
// chunks than a load adds at once is searchable as of its snapshot,
// counting the chunks not found yet, and finds them once the catch-up,
// run in the background, is done.
func TestLoadSearchableWhileCatchingUp(t *testing.T) {
	src, dir := newMemSource(), filepath.Join(t.TempDir(), "index")
	r := New(src, dir, "m", func() int { return 2 }, Options{}, quietLog())
	committed(t, r, src, "cus_a", chunkEntries(1, 3, "walrus"))
	must(t, r.SnapshotWhole())
	src.put("cus_a", chunkEntries(4, 7, "narwhal")...)

	bg := newBackground()
	bg.hold = make(chan struct{})
	r = New(src, dir, "m", func() int { return 2 }, Options{CatchUpInline: 2, CatchUpWait: -1, Go: bg.run}, quietLog())
	if got := loadedIDs(t, r, "cus_a"); !slices.Equal(got, seqRange(1, 3)) {
		t.Fatalf("before the catch-up the index holds %v, want its snapshot's 1-3", got)
	}
	if n := r.CatchingUp("cus_a"); n != 7 {
		t.Errorf("%d chunks counted catching up, want 7", n)
	}
	close(bg.hold)
	bg.wait(t)
	if got := loadedIDs(t, r, "cus_a"); !slices.Equal(got, seqRange(1, 10)) {
		t.Fatalf("after the catch-up the index holds %v, want 1-10", got)
	}
	if n := r.CatchingUp("cus_a"); n != 0 {
		t.Errorf("%d chunks counted catching up once it is done", n)
	}
}

// TestCatchUp: another node's changes to a loaded owner's chunks reach
// its index with CatchUp; an owner not loaded stays so; an owner
// reindexed meanwhile with another model is loaded afresh in it.
func TestCatchUp(t *testing.T) {
	src := newMemSource()
	r := testSet(t, src, Options{})
	committed(t, r, src, "cus_a", chunkEntries(1, 4, "walrus"))

	src.put("cus_a", chunkEntries(10, 2, "narwhal")...)
	src.remove("cus_a", 1, 2)
	must(t, r.CatchUp("cus_a"))
	if got, want := loadedIDs(t, r, "cus_a"), []uint64{3, 4, 10, 11}; !slices.Equal(got, want) {
		t.Fatalf("after CatchUp the index holds %v, want %v", got, want)
	}

	src.put("cus_b", chunkEntries(20, 2, "beluga")...)
	must(t, r.CatchUpAll())
	if sizes := r.Sizes(); !slices.Equal(sizes, []int{4}) {
		t.Errorf("CatchUpAll loaded an owner: loaded sizes %v, want only cus_a's 4", sizes)
	}

	src.setModel("cus_a", "m2", 2)
	must(t, r.CatchUp("cus_a"))
	x, err := r.Get("cus_a")
	must(t, err)
	if x.Model() != "m2" || !slices.Equal(x.IDs(), []uint64{3, 4, 10, 11}) {
		t.Errorf("after a reindex elsewhere: model %s holding %v, want m2 holding 3, 4, 10, 11", x.Model(), x.IDs())
	}
}

// TestEvict: once this node no longer holds an owner, Evict saves its
// index and drops it, and it loads again from that snapshot should it
// come back; a change to an owner held elsewhere reaches the store only.
func TestEvict(t *testing.T) {
	var mu sync.Mutex
	held := map[string]bool{"cus_a": true, "cus_b": true}
	holds := func(owner string) bool {
		mu.Lock()
		defer mu.Unlock()
		return held[owner]
	}
	src := newMemSource()
	r := testSet(t, src, Options{Holds: holds})
	committed(t, r, src, "cus_a", chunkEntries(1, 3, "walrus"))
	committed(t, r, src, "cus_b", chunkEntries(10, 5, "narwhal"))
	src.put("cus_b", index.Entry{ID: 15, Vector: []float32{0, 0}, Text: "beluga"})
	must(t, r.CatchUp("cus_b"))
	if n := r.Waiting("cus_b"); n != 1 {
		t.Fatalf("%d of cus_b's chunks waiting for a vector, want 1", n)
	}

	r.Evict() // every owner still held here
	if sizes := r.Sizes(); len(sizes) != 2 {
		t.Fatalf("Evict with every owner held left %v loaded", sizes)
	}

	mu.Lock()
	held["cus_b"] = false
	mu.Unlock()
	r.Evict()
	if sizes := r.Sizes(); !slices.Equal(sizes, []int{3}) {
		t.Fatalf("after Evict the loaded owners' sizes are %v, want cus_a's 3", sizes)
	}
	if n := r.Waiting("cus_b"); n != 0 {
		t.Errorf("an evicted owner still counts %d chunks waiting", n)
	}
	x, _, err := index.ReadSnapshot(r.path("cus_b"))
	must(t, err)
	if got := x.IDs(); !slices.Equal(got, seqRange(10, 15)) {
		t.Errorf("the evicted owner's snapshot holds %v, want 10-15", got)
	}

	// Held elsewhere and not loaded: the change is the store's alone.
	must(t, r.Update("cus_b", func(x *index.OwnerIndex) (uint64, error) {
		src.remove("cus_b", 10)
		x.Delete(10)
		return 0, nil
	}))
	if sizes := r.Sizes(); len(sizes) != 1 {
		t.Fatalf("an update of an owner held elsewhere loaded it: sizes %v", sizes)
	}

	mu.Lock()
	held["cus_b"] = true
	mu.Unlock()
	if got := loadedIDs(t, r, "cus_b"); !slices.Equal(got, seqRange(11, 15)) {
		t.Errorf("back on this node cus_b's index holds %v, want 11-15", got)
	}
}
