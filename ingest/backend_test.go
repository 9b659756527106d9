package ingest_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// backendOnly hides every method of the bbolt store that is not on
// store.Backend, as a store of another kind lacks them.
type backendOnly struct{ store.Backend }

// TestEngineOnBackendOnly runs the engine over nothing but store.Backend:
// it starts without the bbolt store's sweep of orphaned files (which the
// bare *bolt.Store does run), indexes a document and finds it.
func TestEngineOnBackendOnly(t *testing.T) {
	dir, projectID := newProject(t)
	orphan := filepath.Join(dir, "files", projectID, "0000orphan")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("left by a crash"), 0o600); err != nil {
		t.Fatal(err)
	}

	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	em := llm.NewBuiltin()
	eng := ingest.New(backendOnly{st}, em, filepath.Join(dir, "index"), ingest.Config{Workers: 1}, log)
	if err := eng.Start(); err != nil {
		t.Fatalf("start engine: %v", err)
	}
	defer eng.Shutdown(context.Background())
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("the orphan was touched by a store without SweepFiles: %v", err)
	}

	job, _, err := eng.Submit(ingest.Upload{ProjectID: projectID, OwnerID: projectID, Name: "valves", Data: []byte("The heliotrope valve is greased every ninety days.")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if j, err := eng.WaitJob(ctx, job.ID); err != nil || j.Status != store.StatusSucceeded {
		t.Fatalf("job = %+v, %v; want SUCCEEDED", j, err)
	}
	res, _, err := search.New(eng, backendOnly{st}, llm.NewExtractive(), nil, log).Search(context.Background(), projectID, "heliotrope valve", 5)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	wantFound(t, res, job.DocumentID, "heliotrope valve")

	// The same data dir through the bare bbolt store: the sweep runs.
	if err := eng.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	bare := ingest.New(st, em, filepath.Join(dir, "index"), ingest.Config{Workers: 1}, log)
	if err := bare.Start(); err != nil {
		t.Fatalf("start engine: %v", err)
	}
	defer bare.Shutdown(context.Background())
	if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("orphan after a start on *bolt.Store: %v, want it swept", err)
	}
}
