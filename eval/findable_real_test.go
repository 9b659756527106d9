package eval

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
)

// BenchmarkRealOllamaFindable indexes a PDF with a model of
// nomic-embed-text's sizes, one worker, and reports how soon the document
// could be found by its words beside how long until its job SUCCEEDED,
// every chunk embedded: about 1.6 chunks a second on two idle cores.
// gnuplot.pdf (311 pages, 681 chunks) takes about 7 minutes, libtasn1.pdf
// (36 pages, 60 chunks) under one. Run one, once:
// -bench 'RealOllamaFindable/gnuplot' -benchtime 1x.
func BenchmarkRealOllamaFindable(b *testing.B) {
	for _, name := range []string{"libtasn1", "gnuplot"} {
		b.Run(name, func(b *testing.B) {
			file := filepath.Join(pdfDir, name+".pdf")
			if _, err := os.Stat(file); err != nil {
				b.Skipf("the shared PDFs are not here: %v", err)
			}
			srv := ollamareal.StartConfig(b, ollamareal.Config{Models: []ollamareal.Model{ollamareal.NomicSized}})
			for i := 0; i < b.N; i++ {
				benchFindable(b, srv, file)
			}
		})
	}
}

func benchFindable(b *testing.B, srv *ollamareal.Server, file string) {
	em, err := llm.NewOllamaEmbedder(llm.OllamaConfig{URL: srv.URL, EmbedModel: ollamareal.NomicSized.Name, Timeout: 30 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if err := em.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	res, err := BenchIngest(context.Background(), IngestConfig{Files: []string{file}, Embedder: em, Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d chunks: findable by their words after %.2f s, SUCCEEDED after %.1f s (%.2f chunks/s); %d texts in %d calls",
		res.Chunks, res.FindableSeconds, res.Seconds, res.ChunksPerSecond, res.EmbedTexts, res.EmbedCalls)
	b.ReportMetric(res.FindableSeconds, "findable-s")
	b.ReportMetric(res.Seconds, "succeeded-s")
	b.ReportMetric(float64(res.Chunks), "chunks")
}
