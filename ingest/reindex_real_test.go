package ingest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// smallEmbed is a second embedding model for the real server, of another
// dimension than tinyembed's 128.
var smallEmbed = ollamareal.Bert("smallembed", ollamareal.BertSpec{
	Hidden: 64, Layers: 2, Heads: 4, Intermediate: 128,
	Positions: 512, Words: 4000, Seed: 11,
})

// TestRealOllamaDimensionAndReindex runs the owner-model bookkeeping
// against the real server: the dimension the server's vectors have is the
// one recorded for the owner, an engine started with another model warns
// and refuses to mix vectors into the owner, and a reindex moves the owner
// to the new model and its dimension.
func TestRealOllamaDimensionAndReindex(t *testing.T) {
	srv := ollamareal.StartConfig(t, ollamareal.Config{Models: []ollamareal.Model{ollamareal.TinyEmbed, smallEmbed}})
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	embedder := func(model string) llm.Embedder {
		em, err := ollama.NewEmbedder(ollama.Config{URL: srv.URL, EmbedModel: model, Timeout: 5 * time.Minute, BatchSize: ollama.DefaultBatchSize})
		if err != nil {
			t.Fatal(err)
		}
		if err := em.Check(ctx); err != nil {
			t.Fatal(err)
		}
		return em
	}

	first := New(st, embedder(ollamareal.TinyEmbed.Name), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	job, _, err := first.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: "zoo.txt", Data: []byte("The zebra sleeps standing up. Penguins cannot fly but swim well.")})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJobReal(t, first, job.ID); j.Status != store.StatusSucceeded {
		t.Fatalf("job %+v", j)
	}
	om, err := st.OwnerModel("cus_a")
	if err != nil || om.Dim != 128 || !strings.Contains(om.Model, ollamareal.TinyEmbed.Name) {
		t.Fatalf("owner model %+v, %v; want tinyembed's 128 dimensions", om, err)
	}
	first.Shutdown(ctx)

	second := New(st, embedder(smallEmbed.Name), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Shutdown(context.Background()) })
	res, warnings, err := searcher(second).Search(ctx, "cus_a", "zebra", 3)
	if err != nil || len(res) == 0 || len(warnings) != 1 || !strings.Contains(warnings[0], ollamareal.TinyEmbed.Name) {
		t.Fatalf("search under another model = %d results, %q, %v; want lexical results and a warning naming tinyembed", len(res), warnings, err)
	}
	job2, _, _ := second.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: "b.txt", Data: []byte("Giraffes have long necks.")})
	if j := waitJobReal(t, second, job2.ID); j.Status != store.StatusFailed || !strings.Contains(j.Error, "docsift reindex") {
		t.Fatalf("upload into an owner of another model: %+v", j)
	}
	if n, err := second.Reindex(ctx, "cus_a", nil); err != nil || n != 1 {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
	om, err = st.OwnerModel("cus_a")
	if err != nil || om.Dim != 64 || !strings.Contains(om.Model, smallEmbed.Name) {
		t.Fatalf("owner model after reindex %+v, %v; want smallembed's 64 dimensions", om, err)
	}
	res, warnings, err = searcher(second).Search(ctx, "cus_a", "zebra", 3)
	if err != nil || len(res) == 0 || len(warnings) != 0 {
		t.Fatalf("search after reindex = %d results, %q, %v", len(res), warnings, err)
	}
}

// waitJobReal waits for a job to end, as long as a loaded machine may need
// to embed through the real server.
func waitJobReal(t *testing.T, e *Engine, id string) *store.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	j, err := e.WaitJob(ctx, id)
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	return j
}
