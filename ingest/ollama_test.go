package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

const testEmbedModel = "nomic-embed-text"

func ollamaEngine(t *testing.T, ol *ollamatest.Server, cfg Config) (*Engine, *bolt.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	em, err := ollama.NewEmbedder(ollama.Config{URL: ol.URL, EmbedModel: testEmbedModel, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 1
	e := New(st, em, filepath.Join(dir, "index"), cfg, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e, st
}

// waitStatus waits until a job reaches status, woken by job ends and retries.
func waitStatus(t *testing.T, e *Engine, id, status string) *store.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := e.WaitJobUntil(ctx, id, func(j *store.Job) bool { return j.Status == status })
	if err != nil {
		t.Fatalf("job %s never %s: %v (last seen %+v)", id, status, err, j)
	}
	return j
}

func TestOllamaDownJobWaitsAndCompletes(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	// A long first back-off keeps the job waiting while the test looks at it;
	// the stand-in coming back is then signalled by poking the queue.
	e, st := ollamaEngine(t, ol, Config{RetryBase: time.Hour, MaxAttempts: 5})
	ol.Stop()
	job, _, err := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "a.txt", Data: []byte("Kangaroos carry their young in a pouch.")})
	if err != nil {
		t.Fatal(err)
	}
	j := waitStatus(t, e, job.ID, store.StatusPending)
	for j.Attempts == 0 {
		j = waitStatus(t, e, job.ID, store.StatusPending)
	}
	if !strings.Contains(j.Error, "retrying") || j.NotBefore.IsZero() {
		t.Fatalf("waiting job = %+v, want a retry with its reason", j)
	}
	if err := ol.Start(); err != nil {
		t.Fatal(err)
	}
	// Make the job due now, as the back-off ending would.
	if err := st.RetryJob(job.ID, time.Now(), j.Error); err != nil {
		t.Fatal(err)
	}
	e.poke()
	j = waitStatus(t, e, job.ID, store.StatusSucceeded)
	if j.Chunks != 1 || j.Attempts != 2 {
		t.Fatalf("after Ollama came back: %+v", j)
	}
	res, warnings, err := searcher(e).Search(context.Background(), "prj_p", "kangaroo pouch", 3)
	if err != nil || len(res) != 1 || len(warnings) != 0 {
		t.Fatalf("search = %v %q %v", res, warnings, err)
	}

	// With Ollama down, a query still answers from the lexical index. (A
	// query not asked before: one that was may have its vector cached.)
	ol.Stop()
	res, warnings, err = searcher(e).Search(context.Background(), "prj_p", "pouch of a kangaroo", 3)
	if err != nil || len(res) != 1 || len(warnings) != 1 || !strings.Contains(warnings[0], "lexical") {
		t.Fatalf("search with Ollama down = %v %q %v", res, warnings, err)
	}
}

func TestOllamaRetryBudgetEndsInFailed(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	e, _ := ollamaEngine(t, ol, Config{RetryBase: time.Millisecond, RetryMax: time.Millisecond, MaxAttempts: 3})
	ol.FailNext("/api/embed", 100, 503)
	job, _, _ := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "a.txt", Data: []byte("Some text to embed.")})
	j := waitStatus(t, e, job.ID, store.StatusFailed)
	if j.Attempts != 3 || !strings.Contains(j.Error, "gave up after 3 attempts") {
		t.Fatalf("job = %+v", j)
	}
}

func TestOllamaPermanentErrorFailsAtOnce(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	e, _ := ollamaEngine(t, ol, Config{RetryBase: time.Millisecond, MaxAttempts: 5})
	ol.RemoveModel(testEmbedModel)
	job, _, _ := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "a.txt", Data: []byte("Some text to embed.")})
	j := waitStatus(t, e, job.ID, store.StatusFailed)
	if j.Attempts != 1 || !strings.Contains(j.Error, "docsift models pull") {
		t.Fatalf("job = %+v, want one attempt and what to run", j)
	}
}

func TestOllamaDimensionChangeIsRefused(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	e, st := ollamaEngine(t, ol, Config{RetryBase: time.Millisecond, MaxAttempts: 5})
	ol.SetDim(testEmbedModel, 32)
	job, _, _ := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "a.txt", Data: []byte("Some text to embed.")})
	j := waitStatus(t, e, job.ID, store.StatusFailed)
	if !strings.Contains(j.Error, "dimension") {
		t.Fatalf("job = %+v, want a dimension error", j)
	}
	if seqs, _ := st.OwnerSeqs("prj_p"); len(seqs) != 0 {
		t.Fatalf("vectors of the wrong dimension were stored: %v", seqs)
	}
}

func TestTransientFailures(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("store: replace chunks: %w", syscall.ENOSPC), true},
		{fmt.Errorf("pdf: %w", pdf.ErrCorrupt), false},
		{errors.New("the document contains no text to index"), false},
	} {
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
