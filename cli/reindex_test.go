package cli

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// indexWithBuiltin makes a data dir whose project has one text indexed by
// the built-in embedder, and returns the project id.
func indexWithBuiltin(t *testing.T, dir string) string {
	t.Helper()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, _, _ := st.CreateProject("p")
	e := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	job, _, err := e.Submit(ingest.Upload{ProjectID: p.ID, OwnerID: p.ID, Name: "t.txt", Data: []byte("Lighthouses guide ships along the rocky coast at night.")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	if j, err := e.WaitJob(ctx, job.ID); err != nil || j.Status != store.StatusSucceeded {
		t.Fatalf("job %+v, %v", j, err)
	}
	return p.ID
}

func ownerModel(t *testing.T, dir, owner string) string {
	t.Helper()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	om, err := st.OwnerModel(owner)
	if err != nil {
		t.Fatal(err)
	}
	return om.Model
}

func TestReindexWithoutServer(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 32})
	dir := t.TempDir()
	owner := indexWithBuiltin(t, dir)
	out := mustCLI(t, "reindex", "--data", dir, "--embedder", "ollama", "--ollama-url", ol.URL, "--embed-model", testEmbedModel)
	if !strings.Contains(out, owner+": 1 chunks re-embedded") {
		t.Fatalf("reindex printed %q", out)
	}
	if m := ownerModel(t, dir, owner); !strings.HasPrefix(m, "ollama:"+testEmbedModel+"@") {
		t.Fatalf("owner model after reindex: %s, want the model keyed on its digest", m)
	}
	out = mustCLI(t, "reindex", "--data", dir, "--embedder", "ollama", "--ollama-url", ol.URL, "--embed-model", testEmbedModel)
	if !strings.Contains(out, "nothing to do") {
		t.Fatalf("second reindex printed %q", out)
	}
	out = mustCLI(t, "reindex", "--data", dir, "--owner", owner, "--embedder", "ollama", "--ollama-url", ol.URL, "--embed-model", testEmbedModel)
	if !strings.Contains(out, owner+": nothing to re-embed (its vectors already come from the current embedder") {
		t.Fatalf("reindex of an owner already re-embedded printed %q", out)
	}
}

// A reindex to an Ollama that is not there says so in words, not in the
// transport's.
func TestReindexOllamaDown(t *testing.T) {
	dir := t.TempDir()
	owner := indexWithBuiltin(t, dir)
	_, err := runCLI(t, "reindex", "--data", dir, "--embedder", "ollama", "--ollama-url", "http://"+freeAddr(t), "--embed-model", testEmbedModel)
	if err == nil || !strings.Contains(err.Error(), "reindex "+owner+": ") || !strings.Contains(err.Error(), "is not reachable") || strings.Contains(err.Error(), "dial tcp") {
		t.Errorf("reindex with Ollama down: %v", err)
	}
}

func TestReindexThroughRunningServer(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 32})
	dir := t.TempDir()
	owner := indexWithBuiltin(t, dir)
	srv := startServe(t, dir, freeAddr(t), "--embedder", "ollama", "--ollama-url", ol.URL, "--embed-model", testEmbedModel)
	embeds := ol.Calls("/api/embed")
	out := mustCLI(t, "reindex", "--data", dir)
	if !strings.Contains(out, owner+": 1 chunks re-embedded") {
		t.Fatalf("reindex printed %q", out)
	}
	if ol.Calls("/api/embed") == embeds {
		t.Fatal("the server did not embed with Ollama")
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if m := ownerModel(t, dir, owner); !strings.HasPrefix(m, "ollama:"+testEmbedModel+"@") {
		t.Fatalf("owner model after reindex: %s, want the model keyed on its digest", m)
	}
}
