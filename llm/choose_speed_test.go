package llm

import (
	"context"
	"testing"
	"time"
)

// TestMeasureEmbedSpeed: a model that takes 50 ms a request embeds the
// probe's four texts in one request at under 80 a second.
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
	reqs := srv.EmbedRequests()
	if srv.Calls("/api/embed")-before != 1 || len(reqs[len(reqs)-1].Input.([]any)) != speedProbeTexts {
		t.Errorf("the probe was not one request of %d texts", speedProbeTexts)
	}
	for _, in := range reqs[len(reqs)-1].Input.([]any) {
		if n := len(in.(string)); n < speedProbeBytes || n > 2*speedProbeBytes {
			t.Errorf("a probe text of %d bytes, want about %d", n, speedProbeBytes)
		}
	}
}
