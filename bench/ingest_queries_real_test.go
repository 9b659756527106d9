package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// BenchmarkRealOllamaQueriesDuringIngest indexes a PDF through the real
// Ollama server with a model of nomic-embed-text's sizes while one client
// queries the same owner without pause, and reports: when the PDF was
// first findable, when its job SUCCEEDED, and query latency during the
// ingest beside the same kind of queries on the idle server, in the same
// run. Every query is a new text, so none is served by the query cache.
// gnuplot.pdf (681 chunks) takes minutes; run one sub-benchmark, once:
// -bench 'RealOllamaQueriesDuringIngest/gnuplot' -benchtime 1x.
func BenchmarkRealOllamaQueriesDuringIngest(b *testing.B) {
	for _, name := range []string{"libtasn1", "gnuplot"} {
		b.Run(name, func(b *testing.B) {
			file := filepath.Join(pdfDir, name+".pdf")
			if _, err := os.Stat(file); err != nil {
				b.Skipf("the shared PDFs are not here: %v", err)
			}
			srv := ollamareal.StartConfig(b, ollamareal.Config{Models: []ollamareal.Model{ollamareal.NomicSized}})
			for i := 0; i < b.N; i++ {
				benchQueriesDuringIngest(b, srv.URL, ollamareal.NomicSized.Name, file)
			}
		})
	}
}

// oneThreadNomic is the nomic-sized model run on one thread: a server of
// it stands for a one-core machine, so two of them on this two-core
// machine stand for two such machines.
var oneThreadNomic = ollamareal.Bert("nomic-sized-1t", ollamareal.NomicSizes)

// BenchmarkRealOllamaTwoServers indexes libtasn1.pdf (60 chunks) with
// --ollama-url naming one server and then two, each running the
// nomic-sized model on one thread (one core each, as two small machines
// would give), and reports the throughput of two against one.
func BenchmarkRealOllamaTwoServers(b *testing.B) {
	file := filepath.Join(pdfDir, "libtasn1.pdf")
	if _, err := os.Stat(file); err != nil {
		b.Skipf("the shared PDFs are not here: %v", err)
	}
	cfg := ollamareal.Config{Models: []ollamareal.Model{oneThreadNomic}}
	a, c := ollamareal.StartConfig(b, cfg), ollamareal.StartConfig(b, cfg)
	for i := 0; i < b.N; i++ {
		var perSecond [2]float64
		// one, two, two, one: a load that drifts slows both alike.
		for _, urls := range []string{a.URL, a.URL + "," + c.URL, a.URL + "," + c.URL, a.URL} {
			em, err := ollama.NewEmbedder(ollama.Config{URL: urls, EmbedModel: oneThreadNomic.Name, Timeout: 30 * time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if err := em.Check(context.Background()); err != nil {
				b.Fatal(err)
			}
			res, err := Ingest(context.Background(), IngestConfig{Files: []string{file}, Embedder: em})
			if err != nil {
				b.Fatal(err)
			}
			servers := strings.Count(urls, ",") + 1
			perSecond[servers-1] += res.ChunksPerSecond / 2
			b.Logf("%d server(s): %d chunks in %.1f s, %.2f chunks/s", servers, res.Chunks, res.Seconds, res.ChunksPerSecond)
		}
		b.Logf("two servers against one: %.2f against %.2f chunks/s, %.2f×", perSecond[1], perSecond[0], perSecond[1]/perSecond[0])
		b.ReportMetric(perSecond[0], "one-chunks/s")
		b.ReportMetric(perSecond[1], "two-chunks/s")
		b.ReportMetric(perSecond[1]/perSecond[0], "two/one")
	}
}

func benchQueriesDuringIngest(b *testing.B, url, model, file string) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	em, err := ollama.NewEmbedder(ollama.Config{URL: url, EmbedModel: model, Timeout: 30 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if err := em.Check(ctx); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	p, _, err := st.CreateProject("bench")
	if err != nil {
		b.Fatal(err)
	}
	engine := ingest.New(st, em, filepath.Join(dir, "index"), ingest.Config{}, log)
	if err := engine.Start(); err != nil {
		b.Fatal(err)
	}
	defer engine.Shutdown(ctx)
	queries := search.New(engine, st, llm.NewExtractive(), nil, log)

	// The owner holds a few passages first, so that idle queries have
	// something to find by meaning too.
	seed, _, err := engine.Submit(ingest.Upload{ProjectID: p.ID, OwnerID: p.ID, Name: "seed.txt", Data: []byte(ollamareal.Text(0, 8))})
	if err != nil {
		b.Fatal(err)
	}
	if j, err := engine.WaitJob(ctx, seed.ID); err != nil || j.Status != store.StatusSucceeded {
		b.Fatalf("seed document: %+v, %v", j, err)
	}
	asked := 0
	ask := func() (time.Duration, bool) {
		asked++
		q := fmt.Sprintf("how are %s structures %d encoded", []string{"DER", "ASN.1", "plot", "axis"}[asked%4], asked)
		began := time.Now()
		_, warnings, err := queries.Search(ctx, p.ID, q, 5)
		took := time.Since(began)
		if err != nil {
			b.Fatalf("query %q: %v", q, err)
		}
		lexicalOnly := false
		for _, w := range warnings {
			lexicalOnly = lexicalOnly || strings.Contains(w, "lexical only")
		}
		return took, lexicalOnly
	}
	var idle []float64
	for range 20 {
		took, _ := ask()
		idle = append(idle, float64(took.Microseconds())/1000)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	job, _, err := engine.Submit(ingest.Upload{ProjectID: p.ID, OwnerID: p.ID, Name: filepath.Base(file), Data: data})
	if err != nil {
		b.Fatal(err)
	}
	var during []float64
	lexical := 0
	var j *store.Job
	for {
		if j, err = st.Job(job.ID); err != nil {
			b.Fatal(err)
		}
		if j.Status == store.StatusSucceeded || j.Status == store.StatusFailed {
			break
		}
		took, lexicalOnly := ask()
		during = append(during, float64(took.Microseconds())/1000)
		if lexicalOnly {
			lexical++
		}
	}
	if j.Status != store.StatusSucceeded {
		b.Fatalf("job %+v", j)
	}
	findable, done := j.SearchableAt.Sub(start), j.UpdatedAt.Sub(start) // updated last when it SUCCEEDED
	b.Logf("%s, %d chunks: findable after %.2f s, SUCCEEDED after %.1f s (%.2f chunks/s)",
		filepath.Base(file), j.Chunks, findable.Seconds(), done.Seconds(), float64(j.Chunks)/done.Seconds())
	b.Logf("queries idle: p50 %.0f ms, p99 %.0f ms (%d); during the ingest: p50 %.0f ms, p99 %.0f ms (%d, %d answered lexically because the model was busy)",
		eval.Percentile(idle, 0.5), eval.Percentile(idle, 0.99), len(idle), eval.Percentile(during, 0.5), eval.Percentile(during, 0.99), len(during), lexical)
	b.ReportMetric(findable.Seconds(), "findable-s")
	b.ReportMetric(done.Seconds(), "succeeded-s")
	b.ReportMetric(eval.Percentile(idle, 0.99), "idle-p99-ms")
	b.ReportMetric(eval.Percentile(during, 0.99), "ingest-p99-ms")
}
