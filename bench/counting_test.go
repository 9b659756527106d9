package bench

import (
	"context"
	"testing"

	"github.com/docsift/docsift/llm"
)

// TestCountingEmbedderKeepsEmbedAnalyzed checks that bench ingest's counting
// wrapper passes the built-in embedder's EmbedAnalyzed on, counted, so that
// the pipeline it measures takes the path a server's does, and that it
// has no such method over an embedder without one.
func TestCountingEmbedderKeepsEmbedAnalyzed(t *testing.T) {
	c := newCountingEmbedder(llm.NewBuiltin())
	a, ok := c.(llm.AnalyzingEmbedder)
	if !ok || !llm.InProcess(c) {
		t.Fatalf("counted built-in embedder: EmbedAnalyzed %v, in process %v; want both", ok, llm.InProcess(c))
	}
	vecs, analyses, err := a.EmbedAnalyzed(context.Background(), "notes.txt", []string{"notes.txt\none text", "notes.txt\nanother"})
	if err != nil || len(vecs) != 2 || len(analyses) != 2 {
		t.Fatalf("EmbedAnalyzed = %d vectors, %d analyses, %v", len(vecs), len(analyses), err)
	}
	if calls, texts := c.take(); calls != 1 || texts != 2 {
		t.Errorf("counted %d calls and %d texts, want 1 and 2", calls, texts)
	}
	plain := newCountingEmbedder(struct{ llm.Embedder }{llm.NewBuiltin()})
	if _, ok := plain.(llm.AnalyzingEmbedder); ok {
		t.Error("a counted embedder without EmbedAnalyzed has one")
	}
}
