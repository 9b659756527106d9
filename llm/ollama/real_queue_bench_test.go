package ollama

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
)

// BenchmarkRealOllamaQueryDuringIngest measures how long a query's
// embedding waits behind ingest on one server with a model of
// nomic-embed-text's sizes: query latency alone, then while two ingest
// calls embed 8 chunk-sized texts each (as two ingest workers do), and
// the ratio of the two. Ingest holds one batch of about targetBatchTime in
// flight per server, so a query waits for at most about one batch, however
// many workers ingest ("gated"); the reference ("ungated") gives each
// worker an embedder of its own, two batches in flight. The start-up speed
// probe's figure is reported too.
// Run it alone: `go test ./llm -run '^$' -bench RealOllamaQueryDuringIngest
// -benchtime 1x`.
func BenchmarkRealOllamaQueryDuringIngest(b *testing.B) {
	srv := ollamareal.StartConfig(b, ollamareal.Config{Models: []ollamareal.Model{ollamareal.NomicSized}})
	ctx := context.Background()
	e, err := NewEmbedder(Config{URL: srv.URL, EmbedModel: ollamareal.NomicSized.Name, Timeout: 30 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Check(ctx); err != nil {
		b.Fatal(err)
	}
	perSec, err := llm.MeasureEmbedSpeed(ctx, e)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(perSec, "probe-embeddings/s")

	next := 0
	query := func() time.Duration {
		next++
		start := time.Now()
		if _, err := e.EmbedQuery(ctx, fmt.Sprintf("how long does query %d take to embed", next)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// The reference, in the same run: each worker with an embedder of its
	// own, so that two batches are in flight at once, as when every
	// ingest worker sent its batches regardless of the others.
	other, err := NewEmbedder(Config{URL: srv.URL, EmbedModel: ollamareal.NomicSized.Name, Timeout: 30 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if err := other.Check(ctx); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		var alone []time.Duration
		for range 3 {
			alone = append(alone, query())
		}
		slices.Sort(alone)
		b.ReportMetric(alone[1].Seconds(), "s/query-alone")
		// Teach the batch sizers the model's speed, as a running server's
		// earlier batches would have.
		for _, em := range []*Embedder{e, other} {
			if _, err := em.Embed(ctx, benchInputs(1000, 4)); err != nil {
				b.Fatal(err)
			}
		}
		for _, run := range []struct {
			name    string
			workers [2]*Embedder
		}{{"gated", [2]*Embedder{e, e}}, {"ungated", [2]*Embedder{e, other}}} {
			done := make(chan struct{})
			var wg sync.WaitGroup
			for w, em := range run.workers {
				wg.Go(func() {
					if _, err := em.Embed(ctx, benchInputs(2000+100*w+1000*i, 8)); err != nil {
						b.Error(err)
					}
				})
			}
			go func() { wg.Wait(); close(done) }()
			var during []time.Duration
		queries:
			for {
				select {
				case <-done:
					break queries
				default:
					during = append(during, query())
				}
			}
			slices.Sort(during)
			b.Logf("%s: query alone %v; during ingest %v", run.name, alone, during)
			b.ReportMetric(during[len(during)/2].Seconds(), "s/query-"+run.name)
			b.ReportMetric(during[len(during)-1].Seconds(), "s/query-max-"+run.name)
			b.ReportMetric(during[len(during)/2].Seconds()/alone[1].Seconds(), run.name+"/alone")
		}
	}
}

// benchInputs returns n chunk-sized texts of the shared text from offset.
func benchInputs(offset, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = ollamareal.Text(offset+i, benchWords)
	}
	return out
}
