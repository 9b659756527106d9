package ollama

import (
	"context"
	"fmt"
	"testing"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
)

// TestRealOllamaSeveralServers: two real servers with the same models pass
// the start-up check (their digests agree), share an ingest, and when one
// stops the other carries the ingest and the queries.
func TestRealOllamaSeveralServers(t *testing.T) {
	a, cfg := newRealOllama(t)
	b := ollamareal.StartConfig(t, ollamareal.Config{Models: []ollamareal.Model{ollamareal.TinyEmbed, ollamareal.TinyChat}})
	cfg.URL = a.URL + "," + b.URL
	ctx := realCtx(t)
	e := mustEmbedder(t, cfg)
	if err := e.Check(ctx); err != nil {
		t.Fatalf("Check of two servers with the same models: %v", err)
	}
	texts := make([]string, 24)
	for i := range texts {
		texts[i] = fmt.Sprintf("the water boils at %d degrees at sea level", i)
	}
	one := mustEmbedder(t, Config{URL: a.URL, EmbedModel: realEmbedModel, BatchSize: 4, HTTPClient: cfg.HTTPClient, Timeout: cfg.Timeout})
	want, err := one.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if cosine(got[i], want[i]) < 0.999 {
			t.Fatalf("text %d: another vector from two servers than from one (order lost?)", i)
		}
	}
	b.Stop()
	if _, err := e.Embed(ctx, texts[:8]); err != nil {
		t.Errorf("Embed with one server stopped: %v", err)
	}
	if _, err := e.EmbedQuery(ctx, "boiling point"); err != nil {
		t.Errorf("EmbedQuery with one server stopped: %v", err)
	}
	if _, err := llm.MeasureEmbedSpeed(context.Background(), e); err != nil {
		t.Errorf("MeasureEmbedSpeed: %v", err)
	}
}
