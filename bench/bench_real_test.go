package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm/ollama"
)

// realCorpus writes a BEIR corpus of n passages of the generated models'
// vocabulary (a chunk or two each), so that the test needs no shared data.
func realCorpus(t testing.TB, n, words int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for i := range n {
		if err := enc.Encode(map[string]string{"_id": fmt.Sprint(i), "title": fmt.Sprintf("passage %d", i), "text": ollamareal.Text(i*words, words)}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// benchRealIngest runs Ingest with model on srv, recording docsift's
// requests for the raw comparison.
func benchRealIngest(t testing.TB, srv *ollamareal.Server, model string, batch, workers int, cfg IngestConfig) *IngestResult {
	t.Helper()
	ctx := context.Background()
	rec := &EmbedRecorder{}
	em, err := ollama.NewEmbedder(ollama.Config{URL: srv.URL, EmbedModel: model, BatchSize: batch, HTTPClient: rec.Client(), Timeout: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Check(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.Embedder, cfg.Workers, cfg.Recorder, cfg.OllamaURL = em, workers, rec, srv.URL
	res, err := Ingest(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRealOllamaBenchIngest runs `docsift bench ingest --embedder ollama`'s
// comparison with tinyembed: docsift's throughput, the same requests sent
// straight to Ollama, their ratio, and a second upload that the embedding
// cache serves without the model.
func TestRealOllamaBenchIngest(t *testing.T) {
	srv := ollamareal.Start(t)
	res := benchRealIngest(t, srv, ollamareal.TinyEmbed.Name, ollama.DefaultBatchSize, 0, IngestConfig{Corpus: realCorpus(t, 40, 300), Again: true, Rounds: 2})
	t.Logf("docsift %.1f chunks/s (%d chunks, %.2f s, %d workers); raw %.1f texts/s (%d requests, %.2f s); docsift/raw %.2f; again %.2f s, %d texts embedded",
		res.ChunksPerSecond, res.Chunks, res.Seconds, res.Workers, res.Raw.TextsPerSecond, res.Raw.Requests, res.Raw.Seconds, res.RawRatio, res.Again.Seconds, res.Again.EmbedTexts)
	if res.Rounds != 2 || res.Chunks < 40 || res.EmbedTexts != res.Chunks {
		t.Errorf("%d chunks, %d texts embedded; want every chunk of the 40 passages embedded once", res.Chunks, res.EmbedTexts)
	}
	if res.Raw == nil || res.Raw.Texts != res.EmbedTexts || res.Raw.Requests == 0 || res.EmbedRequests == 0 {
		t.Fatalf("raw replay %+v; docsift sent %d texts in %d requests: want the same texts", res.Raw, res.EmbedTexts, res.EmbedRequests)
	}
	if res.EmbedRequests < res.EmbedTexts/ollama.DefaultBatchSize {
		t.Errorf("%d requests for %d texts: batches larger than %d", res.EmbedRequests, res.EmbedTexts, ollama.DefaultBatchSize)
	}
	if res.RawRatio <= 0 || res.Raw.TextsPerSecond <= 0 {
		t.Errorf("ratio %f, raw %f texts/s: not computed", res.RawRatio, res.Raw.TextsPerSecond)
	}
	if res.Again == nil || res.Again.EmbedTexts != 0 {
		t.Errorf("the second upload embedded %+v; want nothing (the cache)", res.Again)
	}
}

// BenchmarkRealOllamaIngest is the same comparison with a model of
// nomic-embed-text's sizes, on libtasn1.pdf (60 chunks) when the shared
// PDFs are there and on generated passages when not, with one indexing
// worker and two. Run it with `make bench-ollama`.
func BenchmarkRealOllamaIngest(b *testing.B) {
	srv := ollamareal.StartConfig(b, ollamareal.Config{Models: []ollamareal.Model{ollamareal.NomicSized}})
	cfg := IngestConfig{Files: []string{filepath.Join(pdfDir, "libtasn1.pdf")}}
	if _, err := os.Stat(cfg.Files[0]); err != nil {
		b.Logf("%v: generated passages instead", err)
		cfg = IngestConfig{Corpus: realCorpus(b, 30, 250)}
	}
	cfg.Rounds = 2 // docsift, raw, raw, docsift: a drifting load slows both alike
	// The batch is the most per request: below it batches are sized to
	// take about 2 s (llm's batchSizer), a few texts for this model.
	for _, c := range []struct{ batch, workers int }{{ollama.DefaultBatchSize, 2}, {ollama.DefaultBatchSize, 1}} {
		b.Run(fmt.Sprintf("batch=%d/workers=%d", c.batch, c.workers), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res := benchRealIngest(b, srv, ollamareal.NomicSized.Name, c.batch, c.workers, cfg)
				b.Logf("docsift %.2f chunks/s (%d chunks, %.1f s a round); raw %.2f texts/s (%.1f s); %d requests of %.1f texts",
					res.ChunksPerSecond, res.Chunks, res.Seconds, res.Raw.TextsPerSecond, res.Raw.Seconds, res.EmbedRequests, float64(res.EmbedTexts)/float64(max(res.EmbedRequests, 1)))
				b.ReportMetric(res.ChunksPerSecond, "chunks/s")
				b.ReportMetric(res.Raw.TextsPerSecond, "raw-texts/s")
				b.ReportMetric(res.RawRatio, "docsift/raw")
			}
		})
	}
}

// BenchmarkRealOllamaIngestAgain uploads gnuplot.pdf (311 pages) twice with
// tinyembed: the second upload is what the embedding cache leaves of the
// work. Run it with `make bench-ollama`.
func BenchmarkRealOllamaIngestAgain(b *testing.B) {
	file := filepath.Join(pdfDir, "gnuplot.pdf")
	if _, err := os.Stat(file); err != nil {
		b.Skipf("the shared PDFs are not here: %v", err)
	}
	srv := ollamareal.Start(b)
	for i := 0; i < b.N; i++ {
		res := benchRealIngest(b, srv, ollamareal.TinyEmbed.Name, ollama.DefaultBatchSize, 0, IngestConfig{Files: []string{file}, Again: true})
		b.Logf("first upload: %d chunks in %.2f s, %d texts in %d embedder calls (%d requests); again: %.2f s, %d texts in %d calls",
			res.Chunks, res.Seconds, res.EmbedTexts, res.EmbedCalls, res.EmbedRequests, res.Again.Seconds, res.Again.EmbedTexts, res.Again.EmbedCalls)
		b.ReportMetric(res.Seconds, "first-s")
		b.ReportMetric(res.Again.Seconds, "again-s")
		b.ReportMetric(float64(res.Again.EmbedTexts), "again-texts")
	}
}
