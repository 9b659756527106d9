package llm

import (
	"context"
	"testing"
	"time"
)

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
