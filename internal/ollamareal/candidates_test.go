package ollamareal

import (
	"context"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// TestRealOllamaCandidateSizes checks that the stand-ins for the small
// embedding models reach the server with the sizes of the models they stand
// for, as Ollama reports them for the real ones (the published configs:
// hidden size, layers, heads, intermediate size, 512 positions), so that a
// speed measured with them is the speed of a model of those sizes.
func TestRealOllamaCandidateSizes(t *testing.T) {
	cases := []struct {
		model              Model
		dim, layers, heads int
		feedForward        int
	}{
		{AllMiniLMSized, 384, 6, 12, 1536},
		{ArcticXSSized, 384, 6, 12, 1536},
		{ArcticSSized, 384, 12, 12, 1536},
		{BGESmallSized, 384, 12, 12, 1536},
	}
	var models []Model
	for _, c := range cases {
		models = append(models, c.model)
	}
	s := StartConfig(t, Config{Models: models})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range cases {
		show, err := s.Client().Show(ctx, &api.ShowRequest{Model: c.model.Name})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{
			"bert.embedding_length":     float64(c.dim),
			"bert.block_count":          float64(c.layers),
			"bert.attention.head_count": float64(c.heads),
			"bert.feed_forward_length":  float64(c.feedForward),
			"bert.context_length":       512,
		}
		for key, v := range want {
			if got := show.ModelInfo[key]; got != v {
				t.Errorf("%s: %s = %v, want %v", c.model.Name, key, got, v)
			}
		}
		emb, err := s.Client().Embed(ctx, &api.EmbedRequest{Model: c.model.Name, Input: Text(0, 50)})
		if err != nil {
			t.Fatal(err)
		}
		if len(emb.Embeddings) != 1 || len(emb.Embeddings[0]) != c.dim {
			t.Errorf("%s: embed gave %d vectors of %d dimensions, want 1 of %d", c.model.Name, len(emb.Embeddings), len(emb.Embeddings[0]), c.dim)
		}
	}
}
