package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
)

// stallingEmbedder holds the Embed calls of texts holding word until
// release is closed (or the call's context ends), as a model server busy
// with one project's long documents would; the others go through.
type stallingEmbedder struct {
	llm.Embedder
	word    string
	entered chan struct{}
	release chan struct{}
}

func (s *stallingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if strings.Contains(strings.Join(texts, " "), s.word) {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Embedder.Embed(ctx, texts)
}

// One project's backlog of slow documents, taking every worker, does not
// hold back another project's document: the other's runs beside them
// while they run (FIFO, it waited for all of them).
func TestOneProjectsBacklogDoesNotHoldAnotherBack(t *testing.T) {
	dir, _ := newProject(t)
	stall := &stallingEmbedder{Embedder: llm.NewBuiltin(), word: "sluggish", entered: make(chan struct{}, 1), release: make(chan struct{})}
	n := startNode(t, dir, stall)
	defer close(stall.release)
	var slow []*store.Job
	for i := range 4 {
		slow = append(slow, n.submit("prj_slow", "prj_slow", fmt.Sprint("scan", i), fmt.Sprintf("A sluggish scan, number %d, of the harbour's old ledgers.", i)))
	}
	select {
	case <-stall.entered:
	case <-time.After(waitLimit):
		t.Fatal("no slow job reached the embedder")
	}
	quick := n.submit("prj_quick", "prj_quick", "note", "A short note about the tides at the northern pier.")
	if j := n.waitJob(quick.ID); j.Status != store.StatusSucceeded {
		t.Fatalf("the other project's job: %+v", j)
	}
	for _, j := range slow {
		if got, _ := n.store.Job(j.ID); got.Status == store.StatusSucceeded {
			t.Fatalf("slow job %s ended before it was let through", j.ID)
		}
	}
}
