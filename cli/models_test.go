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

const (
	testEmbedModel = "nomic-embed-text"
	testChatModel  = "qwen2.5:1.5b"
)

func TestModelsPull(t *testing.T) {
	ol := ollamatest.New(t)
	ol.AddLibrary(ollamatest.Model{Name: testEmbedModel, Dim: 32})
	ol.AddLibrary(ollamatest.Model{Name: testChatModel})
	out := mustCLI(t, "models", "pull", "--ollama-url", ol.URL, "--embed-model", testEmbedModel, "--chat-model", testChatModel)
	if !strings.Contains(out, testEmbedModel+": ready") || !strings.Contains(out, testChatModel+": ready") {
		t.Fatalf("models pull printed %q", out)
	}
	c, _ := llm.NewOllamaClient(llm.OllamaConfig{URL: ol.URL})
	if err := c.Check(context.Background(), testEmbedModel, testChatModel); err != nil {
		t.Fatalf("after pull: %v", err)
	}
	if _, err := runCLI(t, "models", "pull", "--ollama-url", ol.URL, "--embed-model", "no-such-model"); err == nil {
		t.Fatal("pulling an unknown model did not fail")
	}
}

// TestModelsPullSkipsPresent: models Ollama has are not pulled again (a
// pull asks the registry, which an air-gapped server cannot reach), unless
// --update says so.
func TestModelsPullSkipsPresent(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 32}, ollamatest.Model{Name: testChatModel})
	args := []string{"models", "pull", "--ollama-url", ol.URL, "--embed-model", testEmbedModel, "--chat-model", testChatModel}
	out := mustCLI(t, args...)
	if !strings.Contains(out, testEmbedModel+": already in Ollama") || !strings.Contains(out, testChatModel+": already in Ollama") {
		t.Fatalf("models pull printed %q", out)
	}
	if n := ol.Calls("/api/pull"); n != 0 {
		t.Fatalf("%d pulls of present models", n)
	}
	// Only the models the flags would have a server use.
	if out := mustCLI(t, append(args, "--embedder", "builtin")...); strings.Contains(out, testEmbedModel) || !strings.Contains(out, testChatModel+": already in Ollama") {
		t.Errorf("models pull --embedder builtin printed %q", out)
	}
	if _, err := runCLI(t, append(args, "--embedder", "builtin", "--answerer", "extractive")...); err == nil || !strings.Contains(err.Error(), "use no Ollama model: nothing to pull") {
		t.Errorf("models pull with no Ollama model: %v", err)
	}
	ol.AddLibrary(ollamatest.Model{Name: testEmbedModel, Dim: 32})
	ol.AddLibrary(ollamatest.Model{Name: testChatModel})
	mustCLI(t, append(args, "--update")...)
	if n := ol.Calls("/api/pull"); n != 2 {
		t.Fatalf("--update pulled %d models, want 2", n)
	}
}

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

// TestOllamaModelKey: a new data dir keys vectors on the model's digest;
// owners indexed under the name alone keep it, whatever the spelling now;
// a replaced model is another key; with Ollama down, the key owners use.
func TestOllamaModelKey(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: "tinyembed", Dim: 8})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	embedder := func(name string, check bool) *llm.OllamaEmbedder {
		e, err := llm.NewOllamaEmbedder(llm.OllamaConfig{URL: ol.URL, EmbedModel: name})
		if err != nil {
			t.Fatal(err)
		}
		if check {
			if err := e.Check(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return e
	}
	e := embedder("TinyEmbed:latest", true)
	if got := ollamaModelKey(e, nil, log); got != e.DigestKey() || !strings.HasPrefix(got, "ollama:tinyembed@") {
		t.Errorf("key for a new data dir = %q, want the digest key", got)
	}
	legacy := map[string]store.OwnerModel{"cus_1": {Model: "ollama:tinyembed", Dim: 8}}
	if got := ollamaModelKey(e, legacy, log); got != "ollama:tinyembed" {
		t.Errorf("key with an owner indexed as tinyembed = %q, want ollama:tinyembed", got)
	}
	legacy = map[string]store.OwnerModel{"cus_1": {Model: "ollama:TinyEmbed:latest", Dim: 8}, "cus_2": {Model: "ollama:other", Dim: 8}}
	if got := ollamaModelKey(e, legacy, log); got != "ollama:TinyEmbed:latest" {
		t.Errorf("key with an owner indexed as TinyEmbed:latest = %q, want the name it was recorded under", got)
	}
	keyed := map[string]store.OwnerModel{"cus_1": {Model: e.DigestKey(), Dim: 8}}
	if got := ollamaModelKey(embedder("tinyembed", false), keyed, log); got != e.DigestKey() {
		t.Errorf("key with Ollama down = %q, want the owners' %q", got, e.DigestKey())
	}
	ol.SetDim("tinyembed", 16) // another model under the name
	replaced := embedder("tinyembed", true)
	if got := ollamaModelKey(replaced, keyed, log); got == e.DigestKey() || got != replaced.DigestKey() {
		t.Errorf("key after the model was replaced = %q, want a new one", got)
	}
}
