package ingest

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// renamed is the built-in embedder under another model name: a stand-in
// for a second embedding model.
type renamed struct {
	llm.Embedder
	name string
}

func (r renamed) Model() string { return r.name }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startEngine(t *testing.T, st *bolt.Store, dir string, em llm.Embedder) *Engine {
	t.Helper()
	e := New(st, em, filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e
}

func waitJob(t *testing.T, e *Engine, id string) *store.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := e.WaitJob(ctx, id)
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	return j
}

func TestReindexSwitchesModelWithoutMixing(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	oldModel := renamed{llm.NewBuiltin(), "old-model"}
	e1 := New(st, oldModel, filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	if err := e1.Start(); err != nil {
		t.Fatal(err)
	}
	job, _, err := e1.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: "zoo.txt", Data: []byte("The zebra sleeps standing up. Penguins cannot fly.")})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, e1, job.ID); j.Status != store.StatusSucceeded {
		t.Fatalf("job %+v", j)
	}
	e1.Shutdown(context.Background())

	// The server now embeds with the built-in model and cannot run the old one.
	e2 := startEngine(t, st, dir, llm.NewBuiltin())
	res, warnings, err := searcher(e2).Search(context.Background(), "cus_a", "zebra", 3)
	if err != nil || len(res) == 0 {
		t.Fatalf("search before reindex = %v, %v", res, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "old-model") {
		t.Fatalf("warnings = %q, want one naming the unavailable model", warnings)
	}
	// A new upload for this owner cannot mix vectors: it fails and says why.
	job2, _, _ := e2.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: "b.txt", Data: []byte("Giraffes have long necks.")})
	if j := waitJob(t, e2, job2.ID); j.Status != store.StatusFailed || !strings.Contains(j.Error, "docsift reindex") {
		t.Fatalf("upload into an owner of another model: %+v", j)
	}
	stale, _ := e2.StaleOwners()
	if len(stale) != 1 || stale[0] != "cus_a" {
		t.Fatalf("StaleOwners = %v", stale)
	}
	var calls int
	n, err := e2.Reindex(context.Background(), "cus_a", func(done, total int) { calls++ })
	if err != nil || n != 1 || calls == 0 {
		t.Fatalf("Reindex = %d, %v (progress calls %d)", n, err, calls)
	}
	om, _ := st.OwnerModel("cus_a")
	if om.Model != llm.NewBuiltin().Model() {
		t.Fatalf("owner model after reindex: %+v", om)
	}
	res, warnings, err = searcher(e2).Search(context.Background(), "cus_a", "zebra", 3)
	if err != nil || len(res) == 0 || len(warnings) != 0 {
		t.Fatalf("search after reindex = %v, %q, %v", res, warnings, err)
	}
	if _, err := st.Vector("old-model", res[0].Chunk.Seq); err == nil {
		t.Fatal("old model's vectors kept after reindex")
	}
	if stale, _ := e2.StaleOwners(); len(stale) != 0 {
		t.Fatalf("still stale: %v", stale)
	}
}

func TestShutdownOfAnEngineNeverStarted(t *testing.T) {
	st, err := bolt.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := New(st, llm.NewBuiltin(), t.TempDir(), Config{}, quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a deadline already past, as after a slow reindex
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPreloadLoadsEveryOwnerWithVectors(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e1 := startEngine(t, st, dir, llm.NewBuiltin())
	for _, owner := range []string{"cus_a", "cus_b"} {
		job, _, _ := e1.Submit(Upload{ProjectID: "prj_p", OwnerID: owner, Name: "n.txt", Data: []byte("Walruses rest on sea ice.")})
		waitJob(t, e1, job.ID)
	}
	e1.Shutdown(context.Background())

	e2 := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{}, quietLog())
	e2.workers.Add(1) // as Start does
	e2.preload()
	if sizes := e2.indexes.Sizes(); !slices.Equal(sizes, []int{1, 1}) {
		t.Errorf("loaded owners' sizes after preload: %v, want both owners with 1 chunk", sizes)
	}
}
