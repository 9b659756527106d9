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

// coldEmbedder is an in-process embedder whose first call takes cold, as
// the built-in one's fills its caches, and the rest no time.
type coldEmbedder struct {
	cold  time.Duration
	calls int
}

func (e *coldEmbedder) Model() string   { return "cold" }
func (e *coldEmbedder) Dim() int        { return 1 }
func (e *coldEmbedder) InProcess() bool { return true }
func (e *coldEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.calls++; e.calls == 1 {
		time.Sleep(e.cold)
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1}
	}
	return out, nil
}

// An in-process embedder's speed is that of its second pass: the first
// one's time is its start. Timed cold, this one's four texts in 200 ms
// would read 20 a second.
func TestMeasureEmbedSpeedWarmsInProcess(t *testing.T) {
	e := &coldEmbedder{cold: 200 * time.Millisecond}
	perSec, err := MeasureEmbedSpeed(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if e.calls != 2 || perSec < 1000 {
		t.Errorf("%d calls, %.1f embeddings/s: the cold call was timed", e.calls, perSec)
	}
}
