package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/llm"
	"github.com/spf13/cobra"
)

func evalCmd() *cobra.Command {
	var cfg eval.Config
	var asJSON bool
	var models modelOptions
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure retrieval quality on a BEIR-format dataset",
		Long: `Ingest a BEIR-format corpus into a throwaway data directory through the same
pipeline as uploads, run every judged query through the same ranking as
/query/*, and print nDCG@10, recall@10 and MRR@10 (computed as the BM25
reference script computes them), query latency and ingest time.`,
		Example: `  docsift eval --corpus corpus.jsonl --queries queries.jsonl --qrels qrels/test.tsv`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Corpus == "" || cfg.Queries == "" || cfg.Qrels == "" {
				return errors.New("--corpus, --queries and --qrels are required")
			}
			cfg.Progress = os.Stderr
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			em, err := models.chooseEmbedder(cmd.Context(), nil, log)
			if err != nil {
				return err
			}
			cfg.Embedder, cfg.Log = em, log
			res, err := eval.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, [][2]string{
				{"queries", fmt.Sprint(res.Queries)},
				{"nDCG@10", fmt.Sprintf("%.4f", res.NDCG)},
				{"recall@10", fmt.Sprintf("%.4f", res.Recall)},
				{"MRR@10", fmt.Sprintf("%.4f", res.MRR)},
				{"query p50", fmt.Sprintf("%.2f ms", res.QueryP50Ms)},
				{"query p95", fmt.Sprintf("%.2f ms", res.QueryP95Ms)},
				{"ingest", fmt.Sprintf("%.2f s (%d documents, %d chunks)", res.IngestSeconds, res.Documents, res.Chunks)},
				{"embedder", res.Embedder},
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Corpus, "corpus", "", "BEIR corpus.jsonl")
	f.StringVar(&cfg.Queries, "queries", "", "BEIR queries.jsonl")
	f.StringVar(&cfg.Qrels, "qrels", "", "BEIR qrels TSV (with or without header)")
	f.IntVar(&cfg.TopK, "top-k", eval.DefaultTopK, "metric cut-off")
	f.IntVar(&cfg.Workers, "workers", 0, "indexing workers (default: number of CPUs)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	models.register(f, false, llm.ModeBuiltin)
	return cmd
}
