package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/docsift/docsift/bench"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/spf13/cobra"
)

// benchIngestCmd is `docsift bench ingest`: chunks per second through the
// whole pipeline, in process. asJSON is bench's --json.
func benchIngestCmd(asJSON *bool) *cobra.Command {
	var cfg bench.IngestConfig
	var models modelOptions
	var raw bool
	cmd := &cobra.Command{
		Use:   "ingest [FILE ...]",
		Short: "Chunks per second through the whole pipeline on a corpus file (BEIR corpus.jsonl) or files",
		Long: `Index a corpus file (BEIR corpus.jsonl) and/or files of any supported type in
a throwaway data directory through the same pipeline as uploads, and print
chunks per second from the first upload to the last job's end, and how
soon every document could be found by its words (before its vectors).

With an Ollama embedder (--embedder ollama), the /api/embed requests
docsift made are then sent again, as they were, straight to Ollama: its
throughput alone on the same texts and batches, and docsift's as a share
of it (docsift/raw). --again uploads everything a second time, to show what
the embedding cache saves (a model server's: the built-in embedder has none).`,
		Example: `  docsift bench ingest --corpus corpus.jsonl
  docsift bench ingest manual.pdf
  docsift bench ingest --embedder ollama --embed-model nomic-embed-text --again manual.pdf`,
		RunE: func(cmd *cobra.Command, files []string) error {
			if cfg.Corpus == "" && len(files) == 0 {
				return errors.New("give --corpus or files to ingest")
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			rec := &bench.EmbedRecorder{}
			models.ollama.HTTPClient = rec.Client()
			em, err := models.chooseEmbedder(cmd.Context(), nil, log)
			if err != nil {
				return err
			}
			if oe, ok := em.(*ollama.Embedder); ok && raw {
				cfg.Recorder, cfg.OllamaURL = rec, oe.Client().URL()
			}
			cfg.Files, cfg.Embedder, cfg.Progress, cfg.Log = files, em, os.Stderr, log
			res, err := bench.Ingest(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), *asJSON, res, ingestRows(res))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Corpus, "corpus", "", "BEIR corpus.jsonl")
	f.IntVar(&cfg.Workers, "workers", 0, "indexing workers (default: number of CPUs)")
	f.IntVar(&cfg.Uploaders, "uploaders", bench.ScaleDefaultUploaders, "documents submitted at once, as clients of the API submit them")
	f.BoolVar(&cfg.Again, "again", false, "upload everything a second time after the first pass (the embedding cache's effect, with a model server)")
	f.BoolVar(&raw, "raw", true, "with an Ollama embedder, also time docsift's /api/embed requests sent straight to Ollama")
	f.IntVar(&cfg.Rounds, "rounds", 1, "runs, each in a fresh data dir, alternating docsift and raw Ollama first, for a machine whose load drifts; figures are per run")
	models.register(f, false, llm.ModeBuiltin)
	return cmd
}

// ingestRows are bench ingest's figures as table rows.
func ingestRows(res *bench.IngestResult) [][2]string {
	rows := [][2]string{
		{"documents", fmt.Sprint(res.Documents)},
		{"chunks", fmt.Sprint(res.Chunks)},
		{"findable", fmt.Sprintf("%.2f s until every document could be found by its words", res.FindableSeconds)},
		{"time", fmt.Sprintf("%.2f s until every job SUCCEEDED, every chunk with its vector", res.Seconds)},
		{"throughput", fmt.Sprintf("%.1f chunks/s, %.1f documents/s (%d workers, %d uploads at once, %d rounds)", res.ChunksPerSecond, res.DocumentsPerSecond, res.Workers, res.Uploaders, res.Rounds)},
		{"embedder", fmt.Sprintf("%s: %d texts in %d calls", res.Embedder, res.EmbedTexts, res.EmbedCalls)},
	}
	if r := res.Raw; r != nil {
		rows = append(rows,
			[2]string{"ollama requests", fmt.Sprintf("%d /api/embed requests of %.1f texts on average", res.EmbedRequests, float64(r.Texts)/float64(max(r.Requests, 1)))},
			[2]string{"raw /api/embed", fmt.Sprintf("%.1f texts/s (the same requests straight to Ollama, %d at a time: %.2f s)", r.TextsPerSecond, r.Concurrency, r.Seconds)},
			[2]string{"docsift/raw", fmt.Sprintf("%.2f", res.RawRatio)})
	}
	if a := res.Again; a != nil {
		rows = append(rows, [2]string{"again", fmt.Sprintf("%.2f s, %.1f chunks/s, %d texts embedded in %d calls", a.Seconds, a.ChunksPerSecond, a.EmbedTexts, a.EmbedCalls)})
	}
	return rows
}
