package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docsift/docsift/indexes"
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

	catchUp := newHeldTasks()
	e = New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1,
		Indexes: indexes.Options{CatchUpInline: 1, CatchUpWait: -1, Go: catchUp.run}}, quietLog())
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
	catchUp.hold <- struct{}{}
	<-catchUp.done
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

// heldTasks runs an index set's background work (indexes.Options.Go)
// once hold lets each go, and says on done when each has run.
type heldTasks struct{ hold, done chan struct{} }

func newHeldTasks() *heldTasks {
	return &heldTasks{hold: make(chan struct{}), done: make(chan struct{}, 64)}
}

func (h *heldTasks) run(task func()) {
	go func() {
		<-h.hold
		task()
		h.done <- struct{}{}
	}()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
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
	catchUp := newHeldTasks()
	start := func(hold bool) *Engine {
		cfg := Config{Workers: 1}
		if hold {
			// A chunk missing from the snapshot and segment would be
			// caught up in the background, and held there.
			cfg.Indexes = indexes.Options{CatchUpInline: -1, CatchUpWait: -1, Go: catchUp.run}
		}
		e := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), cfg, quietLog())
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
	close(catchUp.hold) // a catch-up, had the test failed, would hold the shutdown
	must(t, e.Shutdown(context.Background()))
	if len(res) == 0 || !strings.Contains(res[0].Chunk.Text, "lighthouse") || len(warnings) != 0 {
		t.Fatalf("the segment's chunk after a restart: %+v, warnings %q", res, warnings)
	}

	// Segments large enough to hold up the first answer: the snapshot
	// alone answers first, saying what it lacks, and the whole index
	// takes its place once loaded.
	must(t, os.WriteFile(snap, whole, 0o600))
	must(t, os.WriteFile(snap+".seg1", segment, 0o600))
	behind := newHeldTasks()
	e = New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1,
		Indexes: indexes.Options{PreviewSegmentBytes: 1, Go: behind.run}}, quietLog())
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
	close(behind.hold)
	<-behind.done
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
