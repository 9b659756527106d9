package ollama

import (
	"context"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
)

// llm.MeasureEmbedSpeed's probe: four texts of about 1,000 bytes each.
const probeTexts, probeBytes = 4, 1000

// TestMeasureEmbedSpeed: a model that takes 50 ms a request embeds the
// probe's four texts at under 80 a second.
func TestMeasureEmbedSpeed(t *testing.T) {
	srv, cfg := newOllamaTest(t)
	cfg.BatchSize = 8
	srv.SetDelay("/api/embed", 50*time.Millisecond)
	e := mustEmbedder(t, cfg)
	before := srv.Calls("/api/embed")
	perSec, err := llm.MeasureEmbedSpeed(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if perSec <= 0 || perSec > 80 {
		t.Errorf("%.1f embeddings/s, want at most 80 (4 texts, ≥ 50 ms)", perSec)
	}
	// The probe is the embedder's first work, so its batches start small
	// (batch.go); together they carry the probe's texts.
	calls := srv.Calls("/api/embed") - before
	reqs := srv.EmbedRequests()
	var inputs []any
	for _, r := range reqs[len(reqs)-calls:] {
		inputs = append(inputs, r.Input.([]any)...)
	}
	if len(inputs) != probeTexts {
		t.Errorf("the probe sent %d texts, want %d", len(inputs), probeTexts)
	}
	for _, in := range inputs {
		if n := len(in.(string)); n < probeBytes || n > 2*probeBytes {
			t.Errorf("a probe text of %d bytes, want about %d", n, probeBytes)
		}
	}
}

// TestOllamaNotInProcess: an Ollama embedder waits on its server, so
// the pipeline does not write its chunks with their vectors at once.
func TestOllamaNotInProcess(t *testing.T) {
	_, cfg := newOllamaTest(t)
	if e := mustEmbedder(t, cfg); llm.InProcess(e) {
		t.Error("the Ollama embedder says it embeds in process")
	}
}
