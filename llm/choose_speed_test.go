package llm

import (
	"context"
	"testing"
	"time"
)

// TestMeasureEmbedSpeed: a model that takes 50 ms a request embeds the
// probe's four texts at under 80 a second.
func TestMeasureEmbedSpeed(t *testing.T) {
	srv, cfg := newOllamaTest(t)
	cfg.BatchSize = 8
	srv.SetDelay("/api/embed", 50*time.Millisecond)
	e := mustEmbedder(t, cfg)
	before := srv.Calls("/api/embed")
	perSec, err := MeasureEmbedSpeed(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if perSec <= 0 || perSec > 80 {
		t.Errorf("%.1f embeddings/s, want at most 80 (4 texts, ≥ 50 ms)", perSec)
	}
	// The probe is the embedder's first work, so its batches start small
	// (ollama_batch.go); together they carry the probe's texts.
	calls := srv.Calls("/api/embed") - before
	reqs := srv.EmbedRequests()
	var inputs []any
	for _, r := range reqs[len(reqs)-calls:] {
		inputs = append(inputs, r.Input.([]any)...)
	}
	if len(inputs) != speedProbeTexts {
		t.Errorf("the probe sent %d texts, want %d", len(inputs), speedProbeTexts)
	}
	for _, in := range inputs {
		if n := len(in.(string)); n < speedProbeBytes || n > 2*speedProbeBytes {
			t.Errorf("a probe text of %d bytes, want about %d", n, speedProbeBytes)
		}
	}
}
