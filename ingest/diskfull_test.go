package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// The engine against a store that cannot write (a full disk).

// failingFinish is a store that cannot record the first few job
// outcomes, as on a full disk.
type failingFinish struct {
	*bolt.Store
	fails atomic.Int32 // failures left
}

func (f *failingFinish) FinishJob(jobID string, chunks, pages int, errMsg string) error {
	if f.fails.Add(-1) >= 0 {
		return fmt.Errorf("store: finish job: write docsift.db: %w", syscall.ENOSPC)
	}
	return f.Store.FinishJob(jobID, chunks, pages, errMsg)
}

// A job whose outcome the store could not record at first is recorded
// once it can: it does not stay PROCESSING until the next start.
func TestOutcomeRecordedOnceTheStoreCan(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &failingFinish{Store: st}
	f.fails.Store(3)
	e := ingest.New(f, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1, RetryBase: 10 * time.Millisecond}, slog.New(slog.DiscardHandler))
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	job, _, err := e.Submit(ingest.Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "tides.txt", Data: []byte("The tide turns twice a day.")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	j, err := e.WaitJob(ctx, job.ID)
	if err != nil {
		t.Fatalf("job %s: %v", job.ID, err)
	}
	if j.Status != store.StatusSucceeded || f.fails.Load() >= 0 {
		t.Errorf("job %s %q, %d failures left; want it SUCCEEDED after the store's three failures", j.Status, j.Error, f.fails.Load()+1)
	}
}

// failingClaims is a store that cannot claim jobs, as on a full disk; it
// says when it has been asked n times.
type failingClaims struct {
	*bolt.Store
	calls atomic.Int32
	n     int32
	asked chan struct{}
}

func (f *failingClaims) ClaimJobs(int, func(*store.Document) bool, []string) ([]*store.Job, []*store.Document, error) {
	if f.calls.Add(1) == f.n {
		close(f.asked)
	}
	return nil, nil, fmt.Errorf("store: claim job: write docsift.db: %w", syscall.ENOSPC)
}

// A store that keeps failing to claim is not logged at every try: the
// 1st, 2nd and 4th failures are, not the 3rd or the 5th.
func TestClaimFailuresLoggedLessAndLess(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &failingClaims{Store: st, n: 6, asked: make(chan struct{})}
	var logged logBuffer
	e := ingest.New(f, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1}, slog.New(slog.NewTextHandler(&logged, nil)))
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if _, _, err := e.Submit(ingest.Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "tides.txt", Data: []byte("The tide turns twice a day.")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.asked:
	case <-time.After(waitLimit):
		t.Fatalf("the store was asked to claim %d times, want %d", f.calls.Load(), f.n)
	}
	if n := strings.Count(logged.String(), "claiming a job failed"); n != 3 {
		t.Errorf("%d of the first 5 failed claims were logged, want 3 (the 1st, 2nd and 4th):\n%s", n, logged.String())
	}
}
