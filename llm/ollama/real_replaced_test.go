package ollama

import (
	"context"
	"errors"
	"testing"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

// TestRealOllamaModelReplaced: a model created again under its name on the
// real server (new weights, as a newer pull brings) has a new digest; an
// embedder that checked the old one says it was replaced, and a new one
// names another embedding space, so an owner keyed on the old one is not
// mixed with the new vectors.
func TestRealOllamaModelReplaced(t *testing.T) {
	srv, cfg := newRealOllama(t)
	ctx := realCtx(t)
	spec := ollamareal.BertSpec{Hidden: 64, Layers: 1, Heads: 4, Intermediate: 128, Positions: 512, Words: 2000, Seed: 31}
	if err := srv.Create(ctx, ollamareal.Bert("swapped", spec)); err != nil {
		t.Fatal(err)
	}
	// The servers of a test process share one models directory, which the
	// other tests expect to hold the tiny models alone.
	t.Cleanup(func() {
		if err := srv.Client().Delete(context.Background(), &api.DeleteRequest{Model: "swapped"}); err != nil {
			t.Errorf("delete swapped: %v", err)
		}
	})
	cfg.EmbedModel = "swapped"
	before := mustEmbedder(t, cfg)
	if err := before.Check(ctx); err != nil {
		t.Fatal(err)
	}
	spec.Seed = 32
	if err := srv.Create(ctx, ollamareal.Bert("swapped", spec)); err != nil {
		t.Fatal(err)
	}
	var replaced *llm.ModelReplacedError
	if err := before.Check(ctx); !errors.As(err, &replaced) {
		t.Fatalf("Check after the model was created again: %v, want a *llm.ModelReplacedError", err)
	}
	after := mustEmbedder(t, cfg)
	if err := after.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if before.DigestKey() == "" || after.DigestKey() == before.DigestKey() {
		t.Errorf("embedding space %q before the model was replaced and %q after; want two", before.DigestKey(), after.DigestKey())
	}
	if after.NameKey() != before.NameKey() {
		t.Errorf("name keys %q and %q differ for one name", before.NameKey(), after.NameKey())
	}
}
