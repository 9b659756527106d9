package ollama

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/ollama/ollama/api"
)

const (
	// candidateChunkWords is the length of a benchmark input: docsift's
	// typical chunk (ingest's chunkTargetWords; a chunk closes at the first
	// sentence that reaches it).
	candidateChunkWords = 250

	// candidateRounds and candidateTexts size the measurement: each round
	// every model embeds the same candidateTexts new chunks, so the
	// nomic-sized model spends about ten seconds a round and the small
	// ones a few.
	candidateRounds = 4
	candidateTexts  = 8
)

// embedCandidate is a generated model and the real one whose sizes it has.
type embedCandidate struct {
	model    ollamareal.Model
	standsIn string
}

var embedCandidates = []embedCandidate{
	{ollamareal.NomicSized, "nomic-embed-text"},
	{ollamareal.AllMiniLMSized, "all-minilm"},
	{ollamareal.ArcticXSSized, "snowflake-arctic-embed:xs"},
	{ollamareal.ArcticSSized, "snowflake-arctic-embed:s"},
	{ollamareal.BGESmallSized, "bge-small-en-v1.5"},
}

// BenchmarkRealOllamaEmbedModels measures, on the real server, how fast
// models of the candidate default embedders' sizes embed docsift chunks of
// real text: embeddings per second of wall time and CPU seconds per
// embedding, and each model's speed relative to the nomic-sized one in the
// same run. The models take turns within each round, in an order that
// rotates from round to round, so a change in the machine's load hits them
// all alike. Run it with `make bench-ollama` (one op: it takes a few
// minutes, most of it creating the models).
func BenchmarkRealOllamaEmbedModels(b *testing.B) {
	if ollamareal.CorpusPath() == "" {
		b.Skip("skipping: the MS MARCO sample (shared/data/msmarco-5k/corpus.jsonl) is absent, and chunks of real text are what is measured")
	}
	var models []ollamareal.Model
	for _, c := range embedCandidates {
		models = append(models, c.model)
	}
	start := time.Now()
	srv := ollamareal.StartConfig(b, ollamareal.Config{
		Models: models,
		// Every model stays loaded, so that no turn pays for a load.
		Env: map[string]string{"OLLAMA_MAX_LOADED_MODELS": fmt.Sprint(len(models)), "OLLAMA_KEEP_ALIVE": "1h"},
	})
	b.Logf("server up with %d models in %s (generation and conversion included on first use); texts from %s",
		len(models), time.Since(start).Round(time.Second), ollamareal.CorpusPath())
	ctx := context.Background()
	c := srv.Client()
	// Refused rather than truncated: every model must embed the whole chunk for
	// the speeds to compare.
	noTruncate := false
	embed := func(model string, texts []string) (*api.EmbedResponse, error) {
		return c.Embed(ctx, &api.EmbedRequest{Model: model, Input: texts, Truncate: &noTruncate})
	}
	for _, cand := range embedCandidates {
		if _, err := embed(cand.model.Name, []string{"load"}); err != nil {
			b.Fatalf("%s: %v", cand.model.Name, err)
		}
	}

	wall := make([]time.Duration, len(embedCandidates))
	cpu := make([]time.Duration, len(embedCandidates))
	tokens := make([]int, len(embedCandidates))
	next := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for round := 0; round < candidateRounds; round++ {
			texts := make([]string, candidateTexts)
			for j := range texts {
				texts[j] = ollamareal.Text(next, candidateChunkWords)
				// MS MARCO passages average 59 words: a chunk takes about
				// five, and the next chunk starts after them.
				next += 5
			}
			for k := range embedCandidates {
				m := (round + k) % len(embedCandidates)
				name := embedCandidates[m].model.Name
				// A one-word request first, untimed: should the server have
				// unloaded the model after all, the load is not counted.
				if _, err := embed(name, []string{"load"}); err != nil {
					b.Fatalf("%s: %v", name, err)
				}
				cpu0 := cpuTime(b, srv)
				began := time.Now()
				r, err := embed(name, texts)
				if err != nil {
					b.Fatalf("%s: %v", name, err)
				}
				wall[m] += time.Since(began)
				cpu[m] += cpuTime(b, srv) - cpu0
				if len(r.Embeddings) != len(texts) {
					b.Fatalf("%s: %d vectors for %d texts", name, len(r.Embeddings), len(texts))
				}
				tokens[m] += r.PromptEvalCount
			}
		}
	}
	b.StopTimer()

	n := float64(b.N * candidateRounds * candidateTexts)
	for m, cand := range embedCandidates {
		// The vocabularies are the same, so every model must have read the
		// same tokens: otherwise they did different work.
		if tokens[m] != tokens[0] {
			b.Errorf("%s read %d tokens, %s %d: the models did not embed the same input", cand.model.Name, tokens[m], embedCandidates[0].model.Name, tokens[0])
		}
		name := cand.model.Name
		b.ReportMetric(n/wall[m].Seconds(), name+"-embeddings/s")
		b.ReportMetric(cpu[m].Seconds()/n, name+"-cpu-s/embedding")
		b.ReportMetric(cpu[0].Seconds()/cpu[m].Seconds(), name+"-speed-vs-nomic")
		b.Logf("%-16s (%s): %.2f embeddings/s, %.3f CPU s an embedding, %.1fx the nomic-sized model's speed by CPU time",
			name, cand.standsIn, n/wall[m].Seconds(), cpu[m].Seconds()/n, cpu[0].Seconds()/cpu[m].Seconds())
	}
	b.Logf("a %d-word chunk is %.0f tokens on average", candidateChunkWords, float64(tokens[0])/n)
}
