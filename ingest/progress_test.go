package ingest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// TestProgressReportsAreCoalesced checks how a running job's progress
// reaches the store: not before the interval has passed, then the latest
// report only, nothing after the extraction ended, and never on a job that
// is not running.
func TestProgressReportsAreCoalesced(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, _, err := st.CreateProject("progress")
	if err != nil {
		t.Fatal(err)
	}
	job, err := st.CreateDocument(&store.Document{ProjectID: p.ID, OwnerID: p.ID, Name: "scan.pdf", Format: "pdf"}, store.Bytes([]byte("%PDF-1.4 stand-in")), store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.ClaimJob(nil); err != nil {
		t.Fatal(err)
	}
	e := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{}, quietLog())
	progressOf := func() *store.JobProgress {
		t.Helper()
		j, err := st.Job(job.ID)
		if err != nil {
			t.Fatal(err)
		}
		return j.Progress
	}

	// Within the interval nothing is written, and stop cancels the write
	// that was due at its end.
	e.progress.every = time.Hour
	report, stop := e.progressReporter(job.ID)
	for done := range 5 {
		report(done, 10)
	}
	stop()
	if got := progressOf(); got != nil {
		t.Fatalf("progress %+v written within the interval", got)
	}

	// Past the interval the latest report is written; reports after stop
	// are dropped.
	e.progress.every = time.Nanosecond
	written := e.Progressed()
	report, stop = e.progressReporter(job.ID)
	report(3, 10)
	select {
	case <-written:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress written past the interval")
	}
	stop()
	report(4, 10)
	if got := progressOf(); got == nil || *got != (store.JobProgress{PagesDone: 3, Pages: 10}) {
		t.Fatalf("progress %+v, want 3 of 10", got)
	}

	// A job that ended shows no progress, and a late report cannot bring
	// it back.
	if err := st.FinishJob(job.ID, 1, 10, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SetJobProgress(job.ID, store.JobProgress{PagesDone: 9, Pages: 10}); err != nil {
		t.Fatal(err)
	}
	if got := progressOf(); got != nil {
		t.Errorf("finished job shows progress %+v", got)
	}
}
