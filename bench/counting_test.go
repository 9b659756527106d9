package bench

import (
	"context"
	"testing"

	"github.com/docsift/docsift/llm"
)

// TestCountingEmbedderKeepsEmbedAfter checks that bench ingest's counting
// wrapper passes the built-in embedder's EmbedAfter on, counted, so that
// the pipeline it measures takes the path a server's does, and that it
// has no such method over an embedder without one.
func TestCountingEmbedderKeepsEmbedAfter(t *testing.T) {
	c := newCountingEmbedder(llm.NewBuiltin())
	a, ok := c.(llm.CuttingEmbedder)
	if !ok || !llm.InProcess(c) {
		t.Fatalf("counted built-in embedder: EmbedAfter %v, in process %v; want both", ok, llm.InProcess(c))
	}
	vecs, cuts, err := a.EmbedAfter(context.Background(), "notes.txt", []string{"notes.txt\none text", "notes.txt\nanother"})
	if err != nil || len(vecs) != 2 || len(cuts) != 2 {
		t.Fatalf("EmbedAfter = %d vectors, %d cuts, %v", len(vecs), len(cuts), err)
	}
	if calls, texts := c.take(); calls != 1 || texts != 2 {
		t.Errorf("counted %d calls and %d texts, want 1 and 2", calls, texts)
	}
	plain := newCountingEmbedder(struct{ llm.Embedder }{llm.NewBuiltin()})
	if _, ok := plain.(llm.CuttingEmbedder); ok {
		t.Error("a counted embedder without EmbedAfter has one")
	}
}
