package cli

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/store"
)

// TestOllamaModelKey: a new data dir keys vectors on the model's digest;
// owners indexed under the name alone keep it, whatever the spelling now;
// a replaced model is another key; with Ollama down, the key owners use.
func TestOllamaModelKey(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: "tinyembed", Dim: 8})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	embedder := func(name string, check bool) *ollama.Embedder {
		e, err := ollama.NewEmbedder(ollama.Config{URL: ol.URL, EmbedModel: name})
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
