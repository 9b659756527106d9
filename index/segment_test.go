package index

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"
)

// segmentChanges changes an index read from its snapshot in every way a
// segment must hold: the snapshot's slots deleted (a whole document of
// them too), new entries of new documents and of one of the snapshot's,
// some of them deleted again, graph links of old nodes rewritten by the
// new ones. It returns queries that reach the new entries too.
func segmentChanges(t *testing.T, x *OwnerIndex, firstID uint64, n int, seed uint64) []Query {
	t.Helper()
	k := firstID/10000*3 - 1                    // doc_k of the snapshot, whose chunks are
	x.Delete(4*k+1, 4*k+2, 4*k+3, 4*k+4, 100+k) // entries 4k+1 to 4k+4, is deleted whole
	vecs := testVectors(n, 16, seed)
	es := entries(vecs, firstID)
	for i := range es {
		es[i].Text = fmt.Sprintf("added %d about walrus%d", i, i%5)
		doc := fmt.Sprint("new_", firstID, "_", i/3)
		if i%10 == 0 {
			doc = "doc_30" // a document of the snapshot
		}
		es[i].Doc = &Document{ID: doc, Metadata: map[string]string{"dept": fmt.Sprint("d", i%3)}}
	}
	must(t, x.Add(es...))
	x.Delete(firstID+1, firstID+2, firstID+3)
	var qs []Query
	for i, q := range vecs[:20] {
		qs = append(qs,
			Query{Vector: q, Text: fmt.Sprintf("walrus%d", i%5), K: 10},
			Query{Vector: q, K: 10, Filter: func(d *Document) bool { v, _ := d.Meta("dept"); return v == "d2" }})
	}
	return qs
}

// TestSegmentHoldsChangesSinceSnapshot: an index read from its snapshot
// and its segments gives the results, entries and documents of the index
// that wrote them, and of a whole snapshot of it; each segment holds the
// changes since the one before.
func TestSegmentHoldsChangesSinceSnapshot(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	snapshot, err := os.ReadFile(path)
	must(t, err)

	qs = append(qs, segmentChanges(t, x, 10000, 400, 41)...)
	saved, err := x.Save(path, 2)
	must(t, err)
	if saved.Whole || saved.Segment != 1 || saved.Bytes != fileSize(segmentPath(path, 1)) || saved.Bytes == 0 {
		t.Fatalf("400 entries added to 3000 saved as %+v", saved)
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(snapshot) {
		t.Fatalf("saving a segment changed the snapshot (%v)", err)
	}
	y, seq, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if y.SkippedSegment() != nil || seq != 2 {
		t.Fatalf("segment left out (%v) or lastSeq %d", y.SkippedSegment(), seq)
	}
	same(t, y, x, qs)
	if a, b := y.current.Load(), x.current.Load(); !slices.Equal(a.deleted, b.deleted) || len(a.deleted) != a.dead || !reflect.DeepEqual(a.langs, b.langs) {
		t.Fatalf("read with its segment, %d deleted slots listed (%d deleted), written %d; or the languages' slots differ", len(a.deleted), a.dead, len(b.deleted))
	}
	if y.Document(10000).ID != "doc_30" || y.Document(10004).ID != "new_10000_1" || y.Has(10) || y.Has(102) || y.Has(10002) {
		t.Fatal("documents or deletions differ after the segment")
	}
	wholePath := filepath.Join(t.TempDir(), "whole.idx")
	must(t, x.WriteSnapshot(wholePath, 2))
	z, _, err := testOpts.ReadSnapshot(wholePath)
	must(t, err)
	same(t, y, z, qs)

	// More changes on the index read with its segment: the next segment
	// holds those, and the first stays as it was.
	first, err := os.ReadFile(segmentPath(path, 1))
	must(t, err)
	qs = append(qs, segmentChanges(t, y, 20000, 200, 42)...)
	if saved, err := y.Save(path, 3); err != nil || saved.Whole {
		t.Fatalf("second segment: whole %v, %v", saved.Whole, err)
	}
	if after, err := os.ReadFile(segmentPath(path, 1)); err != nil || string(after) != string(first) {
		t.Fatalf("the second segment rewrote the first (%v)", err)
	}
	if got := segmentSlots(path); got != 600 {
		t.Fatalf("the segments' headers add %d slots, want 600", got)
	}
	w, seq, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if w.SkippedSegment() != nil || seq != 3 {
		t.Fatalf("second segment left out (%v) or lastSeq %d", w.SkippedSegment(), seq)
	}
	same(t, w, y, qs)
	exercise(t, w)
}

// same fails unless a and b hold the same entries and answer qs alike.
// readBackSame checks that the snapshot at path, read with every one of
// its segments, is want.
func readBackSame(t *testing.T, path string, want *OwnerIndex, qs []Query) {
	t.Helper()
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if err := y.SkippedSegment(); err != nil {
		t.Fatal(err)
	}
	same(t, y, want, qs)
}

func same(t *testing.T, a, b *OwnerIndex, qs []Query) {
	t.Helper()
	if !slices.Equal(a.IDs(), b.IDs()) {
		t.Fatalf("%d entries, want %d", a.Len(), b.Len())
	}
	if got, want := results(a, qs), results(b, qs); got != want {
		t.Fatalf("results differ:\n%s\nwant\n%s", got, want)
	}
}

// TestSaveWholeUnlessOnItsSnapshot: Save writes the whole snapshot for an
// index in the heap, read from another file, or grown by half since
// its snapshot, and a whole snapshot removes the segment of the last.
func TestSaveWholeUnlessOnItsSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "owner.idx")
	x, _ := mappedTestIndex(t, 400)
	if saved, err := x.Save(path, 1); err != nil || !saved.Whole {
		t.Fatalf("an index in the heap: whole %v, %v", saved.Whole, err)
	}
	must(t, x.Add(entries(testVectors(10, 16, 43), 5000)...))
	if saved, err := x.Save(filepath.Join(dir, "other.idx"), 2); err != nil || !saved.Whole {
		t.Fatalf("saved to another file: whole %v, %v", saved.Whole, err)
	}
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	must(t, y.Add(entries(testVectors(10, 16, 43), 5000)...))
	if saved, err := y.Save(path, 2); err != nil || saved.Whole {
		t.Fatalf("10 entries added to 400: whole %v, %v", saved.Whole, err)
	}
	must(t, y.Add(entries(testVectors(190, 16, 44), 6000)...))
	if saved, err := y.Save(path, 3); err != nil || !saved.Whole {
		t.Fatalf("200 entries added to 400: whole %v, %v", saved.Whole, err)
	}
	if _, err := os.Stat(segmentPath(path, 1)); !os.IsNotExist(err) {
		t.Fatalf("the segment of the snapshot rewritten whole is still there (%v)", err)
	}
	z, seq, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if seq != 3 || z.Len() != y.Len() {
		t.Fatalf("lastSeq %d, %d entries of %d", seq, z.Len(), y.Len())
	}
}

// TestSegmentOfAnotherSnapshotLeftOut: a segment beside a snapshot it was
// not written for (a crash between a whole snapshot's rename and the old
// segments' removal), or one that is damaged, is left out with those
// after it and said so; the index is the snapshot and the segments
// before.
func TestSegmentOfAnotherSnapshotLeftOut(t *testing.T) {
	x, qs := mappedTestIndex(t, 1000)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	segmentChanges(t, x, 10000, 100, 45)
	if saved, err := x.Save(path, 2); err != nil || saved.Whole {
		t.Fatalf("whole %v, %v", saved.Whole, err)
	}
	old, err := os.ReadFile(segmentPath(path, 1))
	must(t, err)
	x.Delete(500)
	must(t, x.WriteSnapshot(path, 3))
	snapshot, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	x.Delete(501)
	if saved, err := x.Save(path, 4); err != nil || saved.Whole {
		t.Fatalf("whole %v, %v", saved.Whole, err)
	}
	first, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if first.Has(501) {
		t.Fatal("the first segment after the snapshot was not applied")
	}
	x.Delete(502)
	if saved, err := x.Save(path, 5); err != nil || saved.Whole {
		t.Fatalf("whole %v, %v", saved.Whole, err)
	}
	second, err := os.ReadFile(segmentPath(path, 2))
	must(t, err)

	for _, c := range []struct {
		k    int
		seg  []byte
		why  string
		want *OwnerIndex
		seq  uint64
	}{
		{1, old, "segment 1 and after left out: segment of another snapshot", snapshot, 3},
		{2, old, "segment 2 and after left out: segment of another snapshot", first, 4},
		{2, append(append([]byte(nil), second[:len(second)/2]...), second[len(second)/2+1:]...), "segment 2 and after left out: checksum mismatch", first, 4},
	} {
		keep, err := os.ReadFile(segmentPath(path, c.k))
		must(t, err)
		must(t, os.WriteFile(segmentPath(path, c.k), c.seg, 0o600))
		y, seq, err := testOpts.ReadSnapshot(path)
		must(t, err)
		if y.SkippedSegment() == nil || y.SkippedSegment().Error() != c.why {
			t.Fatalf("segment %d: skipped %v, want %q", c.k, y.SkippedSegment(), c.why)
		}
		if seq != c.seq {
			t.Fatalf("segment %d: lastSeq %d, want %d", c.k, seq, c.seq)
		}
		same(t, y, c.want, qs)
		must(t, os.WriteFile(segmentPath(path, c.k), keep, 0o600))
	}
	y, seq, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if y.SkippedSegment() != nil || seq != 5 || y.Has(502) {
		t.Fatalf("both segments: skipped %v, lastSeq %d", y.SkippedSegment(), seq)
	}
}

// TestSegmentEveryByteFlipped changes the bytes of a second segment one
// at a time (every 17th: records repeat the same checks), with its
// checksum made right again: each must be left out, the index read again
// from its snapshot and first segment, or give an index that searches,
// changes and snapshots without panicking.
func TestSegmentEveryByteFlipped(t *testing.T) {
	x, _ := mappedTestIndex(t, 200)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	segmentChanges(t, x, 10000, 20, 46)
	if saved, err := x.Save(path, 2); err != nil || saved.Whole {
		t.Fatalf("whole %v, %v", saved.Whole, err)
	}
	segmentChanges(t, x, 20000, 20, 47)
	if saved, err := x.Save(path, 3); err != nil || saved.Whole {
		t.Fatalf("whole %v, %v", saved.Whole, err)
	}
	first, err := os.ReadFile(segmentPath(path, 1))
	must(t, err)
	good, err := os.ReadFile(segmentPath(path, 2))
	must(t, err)
	reread := func() (*OwnerIndex, uint64, error) { return testOpts.readSnapshotFile(path, 0, nil) }
	base, _, err := readSegments(must2(reread()), 1, [][]byte{first}, reread)
	must(t, err)
	refused, tried := 0, 0
	for i := len(segmentMagic); i < len(good)-4; i += 17 {
		tried++
		b := append([]byte(nil), good...)
		b[i] ^= 0xa5
		y, _, err := readSegments(must2(reread()), 1, [][]byte{first, withChecksum(b)}, reread)
		must(t, err)
		if y.SkippedSegment() != nil {
			refused++
			if !slices.Equal(y.IDs(), base.IDs()) {
				t.Fatalf("byte %d: a segment left out left %d entries, the snapshot and first segment %d", i, y.Len(), base.Len())
			}
		}
		exercise(t, y)
	}
	t.Logf("%d of %d altered segments left out", refused, tried)
	if refused == 0 {
		t.Fatal("no altered segment was left out")
	}
}

// must2 is the index of a read that must succeed.
func must2(x *OwnerIndex, _ uint64, err error) *OwnerIndex {
	if err != nil {
		panic(err)
	}
	return x
}

// TestWholeWriteKeepsWritersChanges: a whole snapshot written while
// writers go on holds the version current when it started; the index
// moves onto it with the changes made meanwhile (slots of the file
// deleted and relinked, new entries and documents), giving every result
// an index never saved gives, and its next save holds those changes as
// the file's first segment. Twice: from the heap, then from the file.
func TestWholeWriteKeepsWritersChanges(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	ref, _ := mappedTestIndex(t, 3000) // the same changes, never saved
	path := filepath.Join(t.TempDir(), "owner.idx")
	for round, firstID := range []uint64{10000, 20000} {
		before := results(x, qs)
		ids := x.IDs()
		// Changes while the file is written, which the move applies
		// before it takes the lock, and while those are applied, which
		// it applies with the lock held: two additions sharing terms.
		var changes, later []Query
		x.hooks.wholeWriteStarted = func() { changes = segmentChanges(t, x, firstID, 400, firstID) }
		x.hooks.wholeCatchUpStarted = func() { later = laterChanges(t, x, firstID) }
		saved, err := x.SaveWhole(path, uint64(round+1))
		x.hooks.wholeWriteStarted, x.hooks.wholeCatchUpStarted = nil, nil
		must(t, err)
		if changes == nil || later == nil {
			t.Fatal("no changes while the snapshot was written, or while the move caught up")
		}
		if saved.Held >= time.Second {
			t.Errorf("round %d: writers waited %v for the whole snapshot", round, saved.Held)
		}
		qs = append(qs, segmentChanges(t, ref, firstID, 400, firstID)...)
		qs = append(qs, laterChanges(t, ref, firstID)...)
		changes = append(changes, later...)
		if !mapped(x) {
			t.Fatalf("round %d: the index stayed in the heap", round)
		}
		same(t, x, ref, qs)

		// The file holds the version the write started from.
		y, seq, err := testOpts.ReadSnapshot(path)
		must(t, err)
		if seq != uint64(round+1) || !slices.Equal(y.IDs(), ids) || results(y, qs[:len(qs)-len(changes)]) != before {
			t.Fatalf("round %d: the snapshot is not the version its write started from", round)
		}

		// The next save writes the changes beside it.
		saved, err = x.Save(path, uint64(round+10))
		if err != nil || saved.Whole || saved.Segment != 1 {
			t.Fatalf("round %d: the save after the move wrote %+v (%v), want segment 1", round, saved, err)
		}
		readBackSame(t, path, ref, qs)
	}
	exercise(t, x)
}

// TestMoveMakesDocumentIndex: a move onto a whole snapshot leaves the
// writer its documents by ID, made while no lock is held; the next
// writer made them with the lock held (a sixth of a second at a million
// chunks).
func TestMoveMakesDocumentIndex(t *testing.T) {
	x, _ := mappedTestIndex(t, 300)
	must(t, x.WriteSnapshot(filepath.Join(t.TempDir(), "owner.idx"), 1))
	if !mapped(x) {
		t.Fatal("the index stayed in the heap")
	}
	if x.docOf == nil {
		t.Error("the documents by ID are left for the next writer to make")
	}
}

// laterChanges makes the changes of segmentChanges in two additions.
func laterChanges(t *testing.T, x *OwnerIndex, firstID uint64) []Query {
	return append(segmentChanges(t, x, firstID+30000, 100, firstID+30000),
		segmentChanges(t, x, firstID+30100, 100, firstID+30100)...)
}

// TestSegmentWriteKeepsWritersChanges: writers go on while a segment is
// written; the files then hold the version the save started from, and
// the next segment what the writers changed meanwhile.
func TestSegmentWriteKeepsWritersChanges(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	ref, _ := mappedTestIndex(t, 3000) // the same changes, never saved
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	for round, firstID := range []uint64{10000, 20000} {
		// Changes before the save, which its segment holds.
		qs = append(qs, segmentChanges(t, x, firstID, 150, firstID)...)
		segmentChanges(t, ref, firstID, 150, firstID)
		ids, before := x.IDs(), results(x, qs)
		var changes []Query
		during := firstID + 30000
		x.hooks.segmentWriteStarted = func() { changes = segmentChanges(t, x, during, 150, during) }
		saved, err := x.Save(path, uint64(round+2))
		x.hooks.segmentWriteStarted = nil
		must(t, err)
		if saved.Whole || saved.Segment != 2*round+1 || changes == nil {
			t.Fatalf("round %d: saved %+v; changes while it was written: %v", round, saved, changes != nil)
		}
		qs = append(qs, segmentChanges(t, ref, during, 150, during)...)
		same(t, x, ref, qs)

		y, seq, err := testOpts.ReadSnapshot(path)
		must(t, err)
		if seq != uint64(round+2) || !slices.Equal(y.IDs(), ids) || results(y, qs[:len(qs)-len(changes)]) != before {
			t.Fatalf("round %d: the snapshot and its segments are not the version the save started from", round)
		}

		saved, err = x.Save(path, uint64(round+10))
		if err != nil || saved.Whole || saved.Segment != 2*round+2 {
			t.Fatalf("round %d: the save after wrote %+v (%v), want segment %d", round, saved, err, 2*round+2)
		}
		readBackSame(t, path, ref, qs)
	}
	exercise(t, x)
}

// TestSegmentWriteFailureKeepsChanges: a segment that cannot be written
// leaves the changes it would have held to the next save.
func TestSegmentWriteFailureKeepsChanges(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	ref, _ := mappedTestIndex(t, 3000)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	qs = append(qs, segmentChanges(t, x, 10000, 300, 10000)...)
	segmentChanges(t, ref, 10000, 300, 10000)
	// A directory where the segment goes, which nothing is renamed onto.
	must(t, os.MkdirAll(filepath.Join(segmentPath(path, 1), "in-the-way"), 0o700))
	if saved, err := x.Save(path, 2); err == nil {
		t.Fatalf("saved %+v over a directory", saved)
	}
	must(t, os.RemoveAll(segmentPath(path, 1)))
	if saved, err := x.Save(path, 3); err != nil || saved.Segment != 1 {
		t.Fatalf("the save after the failure wrote %+v (%v), want segment 1", saved, err)
	}
	z, seq, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if seq != 3 || z.SkippedSegment() != nil {
		t.Fatalf("read back up to %d, skipped segment: %v", seq, z.SkippedSegment())
	}
	same(t, z, ref, qs)
}

// TestSegmentWritesWithConcurrentWriters saves segments while another
// goroutine commits additions and deletions (run with -race, it checks
// that the write reads nothing the writer changes); the index read back
// with its segments is the index.
func TestSegmentWritesWithConcurrentWriters(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	next := uint64(50000)
	commits := func() {
		// Commits until the segment's write has gone on beside them.
		for range 40 {
			id := next
			next++
			v := testVectors(1, 16, id)[0]
			must(t, x.Commit(func() error {
				x.Delete(id - 50000 + 6) // an entry of the snapshot's
				return x.Add(Entry{ID: id, Vector: v, Text: fmt.Sprintf("walrus%d added", id%5), Doc: &Document{ID: fmt.Sprint("late_", id/3)}})
			}))
		}
	}
	var wg sync.WaitGroup
	for range 5 {
		started := make(chan struct{})
		x.hooks.segmentWriteStarted = func() { close(started) }
		wg.Add(1)
		go func() { defer wg.Done(); <-started; commits() }()
		saved, err := x.Save(path, 2)
		if err != nil || saved.Whole {
			t.Fatalf("saved %+v (%v), want a segment", saved, err)
		}
		wg.Wait()
	}
	x.hooks.segmentWriteStarted = nil
	must(t, func() error { _, err := x.Save(path, 3); return err }())
	readBackSame(t, path, x, qs)
}

// TestWholeCatchUpWaitsForCommit: a Commit running when the move starts
// applying what writers changed is waited for, not left to the moment
// the lock is held; what it added is in the index that moved.
func TestWholeCatchUpWaitsForCommit(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	ref, _ := mappedTestIndex(t, 3000)
	path := filepath.Join(t.TempDir(), "owner.idx")
	es := entries(testVectors(50, 16, 77), 90000)
	inside, release, waiting := make(chan struct{}), make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	done := make(chan error, 1)
	caughtUp := false
	x.hooks.wholeWriteStarted = func() {
		go func() {
			done <- x.Commit(func() error {
				close(inside)
				<-release
				return x.Add(es...)
			})
		}()
		<-inside
	}
	x.hooks.catchUpWaits = func() { close(waiting); x.hooks.catchUpWaits = nil }
	x.hooks.wholeCatchUpStarted = func() { caughtUp = true }
	go func() { <-waiting; releaseOnce() }()
	_, err := x.SaveWhole(path, 1)
	releaseOnce()
	must(t, err)
	must(t, <-done)
	if !caughtUp {
		t.Fatal("the move did not wait for the Commit to catch up before taking the lock")
	}
	must(t, ref.Add(es...))
	if !mapped(x) {
		t.Fatal("the index stayed in the heap")
	}
	same(t, x, ref, qs)
}

// TestWholeWriteDuringCompaction: a compaction while the snapshot is
// written renumbers the slots, so the index stays in the heap, with every
// change; the file holds the version the write started from.
func TestWholeWriteDuringCompaction(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	ids := x.IDs()
	path := filepath.Join(t.TempDir(), "owner.idx")
	x.hooks.wholeWriteStarted = func() { x.Delete(ids[:len(ids)*3/4]...) }
	before := results(x, qs)
	must(t, x.WriteSnapshot(path, 1))
	if mapped(x) || x.Len() != len(ids)-len(ids)*3/4 {
		t.Fatalf("after a compaction during the write: mapped %v, %d entries", mapped(x), x.Len())
	}
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if !slices.Equal(y.IDs(), ids) || results(y, qs) != before {
		t.Fatal("the snapshot is not the version its write started from")
	}
	if saved, err := x.Save(path, 2); err != nil || !saved.Whole {
		t.Fatalf("the next save wrote %+v (%v), want the whole snapshot", saved, err)
	}
	z, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	same(t, z, x, qs)
}

// TestWholeWriteWithConcurrentWriters writes whole snapshots while
// another goroutine commits additions and deletions throughout (run with
// -race, it checks that the write reads nothing the writer changes); the
// index read back with its next segment is the index.
func TestWholeWriteWithConcurrentWriters(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	path := filepath.Join(t.TempDir(), "owner.idx")
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for id := uint64(50000); ; id++ {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			v := testVectors(1, 16, id)[0]
			must(t, x.Commit(func() error {
				x.Delete(id - 50000 + 6) // an entry of the snapshot's, or none
				return x.Add(Entry{ID: id, Vector: v, Text: fmt.Sprintf("walrus%d added", id%5), Doc: &Document{ID: fmt.Sprint("late_", id/3)}})
			}))
			n++
		}
	}()
	for range 3 {
		must(t, x.WriteSnapshot(path, 1))
	}
	close(stop)
	if n := <-done; n == 0 {
		t.Fatal("no commit ran beside the writes")
	}
	if _, err := x.Save(path, 2); err != nil {
		t.Fatal(err)
	}
	readBackSame(t, path, x, qs)
}

// TestRemoveSegmentsByName: a snapshot's segments go, from the first to
// the last there is; files that only look like them, and other
// snapshots' segments in the same directory, stay.
func TestRemoveSegmentsByName(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "cus_a.idx"), filepath.Join(dir, "cus_ab.idx")
	var stay []string
	for k := 1; k <= 3; k++ {
		must(t, os.WriteFile(segmentPath(path, k), []byte("segment"), 0o600))
		must(t, os.WriteFile(segmentPath(other, k), []byte("segment"), 0o600))
		stay = append(stay, segmentPath(other, k))
	}
	for _, name := range []string{path, path + ".seg", path + ".segx", path + ".seg1.tmp123"} {
		must(t, os.WriteFile(name, []byte("not a segment"), 0o600))
		stay = append(stay, name)
	}
	removeSegments(path)
	for k := 1; k <= 3; k++ {
		if _, err := os.Stat(segmentPath(path, k)); !os.IsNotExist(err) {
			t.Errorf("segment %d is still there: %v", k, err)
		}
	}
	for _, name := range stay {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(name), err)
		}
	}
}

// TestSmallWritesShareBuffers: saves of small owners, a few kilobytes
// each, do not allocate a write buffer of a megabyte apiece (half of what
// a server of 3,000 customers allocated), and a write that failed
// midway leaves nothing of its bytes to the next.
func TestSmallWritesShareBuffers(t *testing.T) {
	dir := t.TempDir()
	failed := errors.New("disk full")
	if _, err := writeAtomically(filepath.Join(dir, "failed"), func(e *encoder) {
		e.bytes(make([]byte, 1000))
		e.err = failed
	}); !errors.Is(err, failed) {
		t.Fatalf("a failed encoding wrote: %v", err)
	}
	allocated := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	const writes = 64
	before := allocated()
	for i := range writes {
		path := filepath.Join(dir, fmt.Sprint(i))
		sum, err := writeAtomically(path, func(e *encoder) { e.u32(uint32(i)) })
		must(t, err)
		b, err := os.ReadFile(path)
		must(t, err)
		if len(b) != 8 || leU32(b) != uint32(i) || leU32(b[4:]) != sum || crc32.Checksum(b[:4], castagnoli) != sum {
			t.Fatalf("write %d: file %x, checksum %x", i, b, sum)
		}
	}
	if got := allocated() - before; got > writes<<20/2 { // a pool may drop some: under -race, a quarter
		t.Errorf("%d writes of 4 bytes allocated %d KiB", writes, got>>10)
	}
}
