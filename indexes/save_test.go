package indexes

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
)

// TestSnapshotWhenGrown: an owner that gains snapshotGrowth entries after
// its last snapshot is snapshotted at once, not at the next period.
func TestSnapshotWhenGrown(t *testing.T) {
	bg := newBackground()
	r := testSet(t, newMemSource(), Options{SnapshotGrowth: 10, Go: bg.run})
	path := r.path("own")
	for i := range 3 {
		must(t, r.Update("own", func(x *index.OwnerIndex) (uint64, error) {
			return 0, x.Add(chunkEntries(uint64(1+4*i), 4, "walrus")...)
		}))
		if _, err := os.Stat(path); err == nil && i < 2 {
			t.Fatalf("snapshotted after %d entries", 4*(i+1))
		}
	}
	bg.wait(t)
	if n := bg.started.Load(); n != 1 {
		t.Fatalf("%d passes of saves started, want 1", n)
	}
	x, _, err := index.ReadSnapshot(path)
	must(t, err)
	if x.Len() != 12 {
		t.Fatalf("the snapshot holds %d entries, want 12", x.Len())
	}
}

// TestSnapshotWhenOwnersGrown: owners that gain snapshotGrowth entries
// together, none of them alone, are all snapshotted at once.
func TestSnapshotWhenOwnersGrown(t *testing.T) {
	bg := newBackground()
	r := testSet(t, newMemSource(), Options{SnapshotGrowth: 10, Go: bg.run})
	owners := []string{"cus_a", "cus_b", "cus_c", "cus_d"}
	for i, owner := range owners {
		must(t, r.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
			return 0, x.Add(chunkEntries(uint64(1+3*i), 3, "walrus")...)
		}))
		if i < 3 && bg.started.Load() > 0 {
			t.Fatalf("saved when the owners had gained %d entries", 3*(i+1))
		}
	}
	bg.wait(t)
	for _, owner := range owners {
		if x, _, err := index.ReadSnapshot(r.path(owner)); err != nil || x.Len() != 3 {
			t.Fatalf("%s's snapshot: %v", owner, err)
		}
	}
	if n := r.unsaved.Load(); n != 0 {
		t.Errorf("%d entries counted as unsaved after every owner was saved", n)
	}
}

// addEntries commits es to owner "own"'s index, as of store sequence seq.
func addEntries(t *testing.T, r *Set, seq uint64, es []index.Entry) {
	t.Helper()
	must(t, r.Update("own", func(x *index.OwnerIndex) (uint64, error) { return seq, x.Add(es...) }))
}

// saveWithCommit runs save, which saves owner "own", with es committed
// at seq while it writes, and fails the test if the commit waits for the
// write or does not run.
func saveWithCommit(t *testing.T, r *Set, during *func(), save func() error, seq uint64, es []index.Entry) {
	t.Helper()
	committed := false
	*during = func() {
		done := make(chan error, 1)
		go func() {
			done <- r.Update("own", func(x *index.OwnerIndex) (uint64, error) { return seq, x.Add(es...) })
		}()
		select {
		case err := <-done:
			must(t, err)
			committed = true
		case <-time.After(stuckLimit):
			t.Error("a commit waited for the save's write")
		}
	}
	defer func() { *during = nil }()
	must(t, save())
	if !committed {
		t.Fatal("no commit ran while the save wrote")
	}
}

// testSetDuringSaves returns a test set that runs the function during
// points to, when not nil, while it writes a save.
func testSetDuringSaves(t *testing.T) (*Set, *func()) {
	during := new(func())
	return testSet(t, newMemSource(), Options{Saving: func(string) {
		if *during != nil {
			(*during)()
		}
	}}), during
}

// TestCommitsDuringWholeSnapshot: while an owner's whole snapshot is
// written, its commits go on; the index then moves onto the file with
// them, and the next save writes them as a segment beside it.
func TestCommitsDuringWholeSnapshot(t *testing.T) {
	r, during := testSetDuringSaves(t)
	path := r.path("own")
	addEntries(t, r, 1, chunkEntries(1, 40, "walrus"))
	saveWithCommit(t, r, during, r.SnapshotWhole, 2, chunkEntries(100, 5, "narwhal"))
	x, lastSeq, err := index.ReadSnapshot(path)
	must(t, err)
	if x.Len() != 40 || lastSeq != 1 {
		t.Fatalf("the snapshot holds %d entries up to %d, want the 40 up to 1 of when it started", x.Len(), lastSeq)
	}
	if got := searchOwner(t, r, "own", index.Query{Text: "narwhal", K: 10}); !slices.Equal(got, []uint64{100, 101, 102, 103, 104}) {
		t.Fatalf("the commit made during the write is not searchable after it: %v", got)
	}
	must(t, r.Snapshot())
	if _, err := os.Stat(path + ".seg1"); err != nil {
		t.Fatalf("the next save wrote no segment: %v", err)
	}
	x, lastSeq, err = index.ReadSnapshot(path)
	must(t, err)
	if x.Len() != 45 || lastSeq != 2 {
		t.Fatalf("the snapshot and its segment hold %d entries up to %d, want 45 up to 2", x.Len(), lastSeq)
	}
}

// TestCommitsDuringSegment: while an owner's segment is written, its
// commits go on; the next save writes them as the segment after it.
func TestCommitsDuringSegment(t *testing.T) {
	r, during := testSetDuringSaves(t)
	path := r.path("own")
	addEntries(t, r, 1, chunkEntries(1, 40, "walrus"))
	must(t, r.SnapshotWhole())
	addEntries(t, r, 2, chunkEntries(100, 5, "narwhal"))
	saveWithCommit(t, r, during, r.Snapshot, 3, chunkEntries(200, 3, "beluga"))
	if _, err := os.Stat(path + ".seg1"); err != nil {
		t.Fatalf("the save wrote no segment: %v", err)
	}
	x, lastSeq, err := index.ReadSnapshot(path)
	must(t, err)
	if x.Len() != 45 || lastSeq != 2 {
		t.Fatalf("the snapshot and its segment hold %d entries up to %d, want the 45 up to 2 of when it started", x.Len(), lastSeq)
	}
	must(t, r.Snapshot())
	x, lastSeq, err = index.ReadSnapshot(path)
	must(t, err)
	if x.Len() != 48 || lastSeq != 3 || x.Segments() != 2 {
		t.Fatalf("after the next save: %d entries up to %d in %d segments, want 48 up to 3 in 2", x.Len(), lastSeq, x.Segments())
	}
}
