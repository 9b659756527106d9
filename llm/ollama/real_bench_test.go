package ollama

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

const (
	// benchWords is the length of a benchmark input: about one docsift
	// chunk.
	benchWords = 250

	// benchTexts is how many inputs one op embeds, whatever the batch
	// size, so that the batch sizes do the same work.
	benchTexts = 32
)

// BenchmarkRealOllamaEmbed measures docsift's embedder on the real server
// with a model of nomic-embed-text's sizes, at three batch sizes, in
// embeddings per second. Run it with `make bench-ollama` (one op a batch
// size is enough: each embeds benchTexts inputs and takes tens of seconds).
func BenchmarkRealOllamaEmbed(b *testing.B) {
	start := time.Now()
	srv := ollamareal.StartConfig(b, ollamareal.Config{Models: []ollamareal.Model{ollamareal.NomicSized}})
	b.Logf("server up with %s in %s (generation and conversion included on first use)", ollamareal.NomicSized.Name, time.Since(start))
	ctx := context.Background()

	// Tokens an input, as the server counts them.
	r, err := srv.Client().Embed(ctx, &api.EmbedRequest{Model: ollamareal.NomicSized.Name, Input: ollamareal.Text(0, benchWords)})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("a %d-word input is %d tokens", benchWords, r.PromptEvalCount)

	next := 1
	for _, batch := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			e, err := NewEmbedder(Config{URL: srv.URL, EmbedModel: ollamareal.NomicSized.Name, BatchSize: batch, Timeout: 30 * time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			// Distinct texts each op, so that no cache could serve them.
			ops := make([][]string, b.N)
			for i := range ops {
				for j := 0; j < benchTexts; j++ {
					ops[i] = append(ops[i], ollamareal.Text(next, benchWords))
					next++
				}
			}
			cpu0 := cpuTime(b, srv)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.Embed(ctx, ops[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(b.N * benchTexts)
			b.ReportMetric(n/b.Elapsed().Seconds(), "embeddings/s")
			// The machine may be shared: CPU time is the steadier measure.
			b.ReportMetric((cpuTime(b, srv)-cpu0).Seconds()/n, "cpu-s/embedding")
		})
	}
}

// BenchmarkRealOllamaChat measures the tiny chat model's generation speed
// as the server reports it (eval_count over eval_duration) for docsift's
// answer length.
func BenchmarkRealOllamaChat(b *testing.B) {
	srv := ollamareal.Start(b)
	ctx := context.Background()
	system, user := GroundedPrompt("what does the service do?", []llm.Source{{Title: "t", Text: ollamareal.Text(0, 300)}})
	var tokens int
	var gen time.Duration
	cpu0 := cpuTime(b, srv)
	for i := 0; i < b.N; i++ {
		err := srv.Client().Chat(ctx, &api.ChatRequest{
			Model:    ollamareal.TinyChat.Name,
			Messages: []api.Message{{Role: "system", Content: system}, {Role: "user", Content: user}},
			Options:  map[string]any{"num_ctx": ollamaNumCtx, "num_predict": ollamaMaxAnswerTokens, "temperature": ollamaTemperature},
		}, func(r api.ChatResponse) error {
			if r.Done {
				tokens += r.EvalCount
				gen += r.EvalDuration
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens)/gen.Seconds(), "tokens/s")
	b.ReportMetric(float64(tokens)/(cpuTime(b, srv)-cpu0).Seconds(), "tokens/cpu-s")
}

func cpuTime(b *testing.B, srv *ollamareal.Server) time.Duration {
	b.Helper()
	d, err := srv.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return d
}
