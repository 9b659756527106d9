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
	var qa eval.QAConfig
	var asJSON bool
	var models modelOptions
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure retrieval quality on a BEIR-format dataset, or on questions about documents",
		Long: `Ingest a BEIR-format corpus into a throwaway data directory through the same
pipeline as uploads, run every judged query through the same ranking as
/query/*, and print nDCG@10, recall@10 and MRR@10 (computed as the BM25
reference script computes them), query latency and ingest time.

With --qa and --docs, ingest the documents a questions file names (the
format of pdfqa/dev.json: {"documents": {"file.pdf": [["question", [pages]],
…]}}), ask each question, and score the pages of the chunks returned: hit@1,
hit@3 and MRR@10 by page. The same numbers for SQLite FTS5 BM25 over
~200-word windows of each page (--bm25-reference, run with python3 on the
text docsift extracted) come in the same run.`,
		Example: `  docsift eval --corpus corpus.jsonl --queries queries.jsonl --qrels qrels/test.tsv
  docsift eval --qa pdfqa/dev.json --docs pdf/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			em, err := models.chooseEmbedder(cmd.Context(), nil, log)
			if err != nil {
				return err
			}
			if qa.Questions != "" {
				return runQA(cmd, qa, em, log, asJSON)
			}
			if cfg.Corpus == "" || cfg.Queries == "" || cfg.Qrels == "" {
				return errors.New("--corpus, --queries and --qrels are required (or --qa and --docs)")
			}
			cfg.Progress = os.Stderr
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
	f.IntVar(&cfg.Workers, "workers", 0, "indexing workers (default: number of CPUs)")
	f.StringVar(&qa.Questions, "qa", "", "questions about documents, with the pages that answer them (pdfqa/dev.json format)")
	f.StringVar(&qa.Docs, "docs", ".", "with --qa: the directory holding the documents")
	f.StringVar(&qa.Reference, "bm25-reference", "bench/pdfqa_bm25.py", "with --qa: the BM25 reference script to run beside docsift (\"\" to skip)")
	f.IntVar(&qa.Workers, "qa-workers", 0, "with --qa: indexing workers (default: number of CPUs)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	models.register(f, false, llm.ModeBuiltin)
	return cmd
}

func runQA(cmd *cobra.Command, qa eval.QAConfig, em llm.Embedder, log *slog.Logger, asJSON bool) error {
	if qa.Reference != "" {
		if _, err := os.Stat(qa.Reference); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "the BM25 reference is not run: %v\n", err)
			qa.Reference = ""
		}
	}
	qa.Embedder, qa.Log, qa.Progress = em, log, os.Stderr
	res, err := eval.RunQA(cmd.Context(), qa)
	if err != nil {
		return err
	}
	rows := [][2]string{
		{"questions", fmt.Sprint(res.Questions)},
		{"hit@1", fmt.Sprintf("%.3f", res.Hit1)},
		{"hit@3", fmt.Sprintf("%.3f", res.Hit3)},
		{"MRR@10", fmt.Sprintf("%.3f", res.MRR)},
	}
	if b := res.BM25; b != nil {
		rows = append(rows,
			[2]string{"BM25 hit@1", fmt.Sprintf("%.3f", b.Hit1)},
			[2]string{"BM25 hit@3", fmt.Sprintf("%.3f", b.Hit3)},
			[2]string{"BM25 MRR@10", fmt.Sprintf("%.3f", b.MRR)})
	}
	rows = append(rows,
		[2]string{"query p50", fmt.Sprintf("%.2f ms", res.QueryP50Ms)},
		[2]string{"documents", fmt.Sprintf("%d (%d chunks)", res.Documents, res.Chunks)},
		[2]string{"embedder", res.Embedder})
	return printResult(cmd.OutOrStdout(), asJSON, res, rows)
}
