package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// TestLoadSearchableBeforeCatchUp: an owner whose snapshot lacks many of
// its chunks (a crash long after the last snapshot) is searchable as soon
// as the snapshot is loaded, saying how many chunks are still missing,
// and finds them once the catch-up is done.
func TestLoadSearchableBeforeCatchUp(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := st.CreateProject("catch-up")
	if err != nil {
		t.Fatal(err)
	}
	owner := p.ID
	run := func(docs map[string]string) *Engine {
		e := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		for name, text := range docs {
			job, _, err := e.Submit(Upload{ProjectID: owner, OwnerID: owner, Name: name, Data: []byte(text)})
			if err != nil {
				t.Fatal(err)
			}
			if j, err := e.WaitJob(context.Background(), job.ID); err != nil || j.Status != store.StatusSucceeded {
				t.Fatalf("job %s: %+v %v", name, j, err)
			}
		}
		return e
	}
	e := run(map[string]string{"bakery.txt": "The bakery on Mill Street sells sourdough rye on Saturdays."})
	must(t, e.Shutdown(context.Background()))
	snap := filepath.Join(dir, "index", filepath.Base(owner)+".idx")
	old, err := os.ReadFile(snap)
	must(t, err)

	later := map[string]string{}
	for i := range 5 {
		later[fmt.Sprint("ferry-", i, ".txt")] = fmt.Sprintf("Timetable %d of the harbour ferry to Vlieland, leaving at dawn.", i)
	}
	e = run(later)
	must(t, e.Shutdown(context.Background()))
	must(t, os.WriteFile(snap, old, 0o600)) // as if it crashed before snapshotting them

	e = New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	e.indexes.catchUpInline, e.indexes.catchUpWait = 1, 0
	e.indexes.catchUpStarts = make(chan struct{})
	must(t, e.Start())
	defer e.Shutdown(context.Background())
	svc := search.New(e, st, llm.NewExtractive(), nil, slog.New(slog.DiscardHandler))
	ask := func(q string) ([]search.Result, []string) {
		res, warnings, err := svc.Search(context.Background(), owner, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		return res, warnings
	}

	res, warnings := ask("sourdough rye bakery")
	if len(res) == 0 || !strings.Contains(res[0].Chunk.Text, "sourdough") {
		t.Fatalf("the snapshot's chunks are not found while catching up: %+v", res)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "catching up with the store since this server started: 5 of its chunks are not found yet") {
		t.Errorf("warnings while catching up: %q", warnings)
	}
	e.indexes.catchUpStarts <- struct{}{}
	must(t, e.indexes.Snapshot()) // waits for the catch-up, which holds the owner's commit lock
	res, warnings = ask("harbour ferry Vlieland timetable")
	found := 0
	for _, r := range res {
		if strings.Contains(r.Chunk.Text, "Vlieland") {
			found++
		}
	}
	if found != 5 || len(warnings) != 0 {
		t.Fatalf("after the catch-up: %d of 5 chunks found, warnings %q", found, warnings)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotWhenGrown: an owner that gains snapshotGrowth entries after
// its last snapshot is snapshotted at once, not at the next period.
func TestSnapshotWhenGrown(t *testing.T) {
	r := testIndexes(t)
	r.snapshotGrowth = 10
	r.grownSnapshots = make(chan error, 1)
	path := r.path("own")
	for i := range 3 {
		must(t, r.Update("own", func(x *index.OwnerIndex) (uint64, error) {
			return 0, x.Add(chunkEntries(uint64(1+4*i), 4, "walrus")...)
		}))
		if _, err := os.Stat(path); err == nil && i < 2 {
			t.Fatalf("snapshotted after %d entries", 4*(i+1))
		}
	}
	must(t, <-r.grownSnapshots)
	x, _, err := index.ReadSnapshot(path)
	must(t, err)
	if x.Len() != 12 {
		t.Fatalf("the snapshot holds %d entries, want 12", x.Len())
	}
}

// TestSnapshotWhenOwnersGrown: owners that gain snapshotGrowth entries
// together, none of them alone, are all snapshotted at once.
func TestSnapshotWhenOwnersGrown(t *testing.T) {
	r := testIndexes(t)
	r.snapshotGrowth = 10
	r.grownSnapshots = make(chan error, 1)
	owners := []string{"cus_a", "cus_b", "cus_c", "cus_d"}
	for i, owner := range owners {
		must(t, r.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
			return 0, x.Add(chunkEntries(uint64(1+3*i), 3, "walrus")...)
		}))
		// A pass is marked running before it starts, and sends its
		// outcome before it is marked done.
		if i < 3 && (r.growing.Load() || len(r.grownSnapshots) > 0) {
			t.Fatalf("saved when the owners had gained %d entries", 3*(i+1))
		}
	}
	select {
	case err := <-r.grownSnapshots:
		must(t, err)
	case <-time.After(stuckLimit):
		t.Fatal("no save once the owners had gained 12 entries")
	}
	for _, owner := range owners {
		if x, _, err := index.ReadSnapshot(r.path(owner)); err != nil || x.Len() != 3 {
			t.Fatalf("%s's snapshot: %v", owner, err)
		}
	}
	if n := r.unsaved.Load(); n != 0 {
		t.Errorf("%d entries counted as unsaved after every owner was saved", n)
	}
}

// TestRestartReadsSegment: a periodic save of an owner that changed
// little since its snapshot writes a segment and leaves the snapshot as
// it was, and a restart after a crash then finds the chunks the segment
// holds without catching up from the store. A clean stop writes the whole
// snapshot.
func TestRestartReadsSegment(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	must(t, err)
	p, _, err := st.CreateProject("segment")
	must(t, err)
	owner := p.ID
	start := func(hold bool) *Engine {
		e := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
		if hold {
			// A chunk missing from the snapshot and segment would be
			// caught up in the background, and held there.
			e.indexes.catchUpInline, e.indexes.catchUpWait = 0, 0
			e.indexes.catchUpStarts = make(chan struct{})
		}
		must(t, e.Start())
		return e
	}
	upload := func(e *Engine, name, text string) {
		job, _, err := e.Submit(Upload{ProjectID: owner, OwnerID: owner, Name: name, Data: []byte(text)})
		must(t, err)
		if j, err := e.WaitJob(context.Background(), job.ID); err != nil || j.Status != store.StatusSucceeded {
			t.Fatalf("job %s: %+v %v", name, j, err)
		}
	}
	e := start(false)
	for i := range 12 {
		upload(e, fmt.Sprint("note-", i, ".txt"), fmt.Sprintf("Meeting note %d about the quarterly budget review.", i))
	}
	must(t, e.Shutdown(context.Background())) // the first save: the whole snapshot
	snap := filepath.Join(dir, "index", filepath.Base(owner)+".idx")
	whole, err := os.ReadFile(snap)
	must(t, err)

	e = start(false)
	upload(e, "lighthouse.txt", "The lighthouse keeper logs every passing tanker at night.")
	must(t, e.indexes.Snapshot())
	if after, err := os.ReadFile(snap); err != nil || string(after) != string(whole) {
		t.Fatalf("a save of one chunk more rewrote the snapshot (%v)", err)
	}
	segment, err := os.ReadFile(snap + ".seg1")
	if err != nil {
		t.Fatalf("no segment beside the snapshot: %v", err)
	}
	must(t, e.Shutdown(context.Background()))
	if _, err := os.Stat(snap + ".seg1"); !os.IsNotExist(err) {
		t.Fatalf("a clean stop left the segment (%v)", err)
	}
	// As if it had crashed after the periodic save.
	must(t, os.WriteFile(snap, whole, 0o600))
	must(t, os.WriteFile(snap+".seg1", segment, 0o600))

	e = start(true)
	svc := search.New(e, st, llm.NewExtractive(), nil, slog.New(slog.DiscardHandler))
	lighthouse := func() ([]search.Result, []string) {
		t.Helper()
		res, warnings, err := svc.Search(context.Background(), owner, "lighthouse keeper tanker", 5)
		must(t, err)
		return res, warnings
	}
	res, warnings := lighthouse()
	close(e.indexes.catchUpStarts) // a catch-up, had the test failed, would hold the shutdown
	must(t, e.Shutdown(context.Background()))
	if len(res) == 0 || !strings.Contains(res[0].Chunk.Text, "lighthouse") || len(warnings) != 0 {
		t.Fatalf("the segment's chunk after a restart: %+v, warnings %q", res, warnings)
	}

	// Segments large enough to hold up the first answer: the snapshot
	// alone answers first, saying what it lacks, and the whole index
	// takes its place once loaded.
	must(t, os.WriteFile(snap, whole, 0o600))
	must(t, os.WriteFile(snap+".seg1", segment, 0o600))
	e = New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	e.indexes.previewSegmentBytes = 1
	e.indexes.previewHolds, e.indexes.previewLoads = make(chan struct{}), make(chan error, 1)
	must(t, e.Start())
	svc = search.New(e, st, llm.NewExtractive(), nil, slog.New(slog.DiscardHandler))
	res, warnings = lighthouse()
	for _, r := range res {
		if strings.Contains(r.Chunk.Text, "lighthouse") {
			t.Errorf("the segment's chunk found before the segment was read: %q", r.Chunk.Text)
		}
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "catching up with the store since this server started: 1 of its chunks are not found yet") {
		t.Fatalf("warnings of the snapshot alone: %q", warnings) // and no load behind it to wait for
	}
	if res, _, err := svc.Search(context.Background(), owner, "quarterly budget meeting note", 5); err != nil || len(res) == 0 {
		t.Errorf("the snapshot's chunks while the segment loads: %+v (%v)", res, err)
	}
	// A commit meanwhile loads the whole index itself rather than
	// change the preview, and the load behind the preview then finds
	// it done.
	upload(e, "harbour.txt", "The harbour master posts the tide tables every Monday.")
	close(e.indexes.previewHolds)
	must(t, <-e.indexes.previewLoads)
	res, warnings = lighthouse()
	harbour, _, err := svc.Search(context.Background(), owner, "harbour master tide tables", 5)
	must(t, err)
	must(t, e.Shutdown(context.Background()))
	if len(res) == 0 || !strings.Contains(res[0].Chunk.Text, "lighthouse") || len(warnings) != 0 {
		t.Fatalf("the segment's chunk once the whole index loaded: %+v, warnings %q", res, warnings)
	}
	if len(harbour) == 0 || !strings.Contains(harbour[0].Chunk.Text, "harbour master") {
		t.Fatalf("the chunk committed while the segment loaded: %+v", harbour)
	}
}

// addEntries commits es to owner "own"'s index, as of store sequence seq.
func addEntries(t *testing.T, r *Indexes, seq uint64, es []index.Entry) {
	t.Helper()
	must(t, r.Update("own", func(x *index.OwnerIndex) (uint64, error) { return seq, x.Add(es...) }))
}

// saveWithCommit runs save, which saves owner "own", with es committed
// at seq while it writes, and fails the test if the commit waits for the
// write or does not run.
func saveWithCommit(t *testing.T, r *Indexes, save func() error, seq uint64, es []index.Entry) {
	t.Helper()
	committed := false
	r.saveWriting = func() {
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
	defer func() { r.saveWriting = nil }()
	must(t, save())
	if !committed {
		t.Fatal("no commit ran while the save wrote")
	}
}

// TestCommitsDuringWholeSnapshot: while an owner's whole snapshot is
// written, its commits go on; the index then moves onto the file with
// them, and the next save writes them as a segment beside it.
func TestCommitsDuringWholeSnapshot(t *testing.T) {
	r := testIndexes(t)
	path := r.path("own")
	addEntries(t, r, 1, chunkEntries(1, 40, "walrus"))
	saveWithCommit(t, r, r.SnapshotWhole, 2, chunkEntries(100, 5, "narwhal"))
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
	r := testIndexes(t)
	path := r.path("own")
	addEntries(t, r, 1, chunkEntries(1, 40, "walrus"))
	must(t, r.SnapshotWhole())
	addEntries(t, r, 2, chunkEntries(100, 5, "narwhal"))
	saveWithCommit(t, r, r.Snapshot, 3, chunkEntries(200, 3, "beluga"))
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
