package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/index"
	"github.com/spf13/cobra"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure speed: the vector index, ingestion, queries against a server"}
	var asJSON bool
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print one JSON object")

	var ic index.BenchConfig
	var queries string
	indexCmd := &cobra.Command{
		Use:   "index",
		Short: "Recall, search latency, build rate and snapshot load of the vector index, on synthetic vectors or .fvecs files",
		Example: `  docsift bench index --n 100000 --dim 384
  docsift bench index --vectors base.fvecs --queries query.fvecs --ground-truth groundtruth.ivecs
  docsift bench index --export /tmp/ann    # the synthetic data as .fvecs, for other libraries`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --queries is a count for synthetic data, or a file beside --vectors.
			if n, err := strconv.Atoi(queries); err == nil {
				ic.Queries = n
			} else {
				ic.QueriesFile = queries
			}
			res, err := index.RunIndexBench(ic, os.Stderr)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, [][2]string{
				{"vectors", fmt.Sprintf("%d × %d dims, %d queries", res.N, res.Dim, res.Queries)},
				{"recall@10", fmt.Sprintf("%.4f", res.RecallAt10)},
				{"search p50", fmt.Sprintf("%.3f ms (single thread, %.0f queries/s)", res.SearchP50Ms, res.SearchQPS)},
				{"search p99", fmt.Sprintf("%.3f ms", res.SearchP99Ms)},
				{"build", fmt.Sprintf("%.0f vectors/s (%.1f s)", res.BuildVectorsPerSecond, res.BuildSeconds)},
				{"snapshot load", fmt.Sprintf("%.2f s, %.1f× faster than rebuilding", res.SnapshotLoadSeconds, res.SnapshotLoadSpeedup)},
				{"memory", fmt.Sprintf("%.0f bytes/vector", res.BytesPerVector)},
			})
		},
	}
	indexCmd.Flags().IntVar(&ic.N, "n", index.BenchDefaultN, "vectors in the index")
	indexCmd.Flags().IntVar(&ic.Dim, "dim", index.BenchDefaultDim, "dimensions")
	indexCmd.Flags().StringVar(&queries, "queries", strconv.Itoa(index.BenchDefaultQueries), "queries timed and scored: a count of synthetic ones, or an .fvecs file with --vectors")
	indexCmd.Flags().StringVar(&ic.VectorsFile, "vectors", "", ".fvecs file of the vectors to index, instead of synthetic ones")
	indexCmd.Flags().StringVar(&ic.GroundTruthFile, "ground-truth", "", ".ivecs file of each query's exact neighbours (default: computed by brute force)")
	indexCmd.Flags().StringVar(&ic.ExportDir, "export", "", "write the vectors, queries and ground truth as .fvecs/.ivecs files to this directory")

	var corpus string
	var workers int
	ingestCmd := &cobra.Command{
		Use:   "ingest [FILE ...]",
		Short: "Chunks per second through the whole pipeline on a corpus file (BEIR corpus.jsonl) or files",
		Example: `  docsift bench ingest --corpus corpus.jsonl
  docsift bench ingest manual.pdf`,
		RunE: func(cmd *cobra.Command, files []string) error {
			if corpus == "" && len(files) == 0 {
				return errors.New("give --corpus or files to ingest")
			}
			res, err := eval.BenchIngest(corpus, files, nil, workers, os.Stderr, nil)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, [][2]string{
				{"documents", fmt.Sprint(res.Documents)},
				{"chunks", fmt.Sprint(res.Chunks)},
				{"time", fmt.Sprintf("%.2f s", res.Seconds)},
				{"throughput", fmt.Sprintf("%.0f chunks/s, %.0f documents/s", res.ChunksPerSecond, res.DocumentsPerSecond)},
				{"embedder", res.Embedder},
			})
		},
	}
	ingestCmd.Flags().StringVar(&corpus, "corpus", "", "BEIR corpus.jsonl")
	ingestCmd.Flags().IntVar(&workers, "workers", 0, "indexing workers (default: number of CPUs)")

	var lc eval.LoadConfig
	var queriesPath string
	queryCmd := &cobra.Command{
		Use:   "query",
		Short: "End-to-end HTTP query latency against a running server",
		Example: `  docsift bench query --url http://127.0.0.1:8080 --key dsk_… --owner prj_… \
    --queries queries.jsonl --concurrency 4 --requests 500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lc.APIKey == "" || lc.OwnerID == "" || queriesPath == "" {
				return errors.New("--key, --owner and --queries are required")
			}
			qs, err := eval.ReadQueries(queriesPath)
			if err != nil {
				return err
			}
			for _, q := range qs {
				lc.Queries = append(lc.Queries, q.Text)
			}
			res, err := eval.BenchQuery(cmd.Context(), lc)
			if err != nil {
				return err
			}
			rows := [][2]string{
				{"requests", fmt.Sprintf("%d (%d errors) at concurrency %d", res.Requests, res.Errors, res.Concurrency)},
				{"throughput", fmt.Sprintf("%.1f requests/s", res.RequestsPerSecond)},
				{"latency p50", fmt.Sprintf("%.2f ms", res.P50Ms)},
				{"latency p99", fmt.Sprintf("%.2f ms", res.P99Ms)},
			}
			if res.FirstError != "" {
				rows = append(rows, [2]string{"first error", res.FirstError})
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, rows)
		},
	}
	qf := queryCmd.Flags()
	qf.StringVar(&lc.URL, "url", "http://"+defaultAddr, "server base URL")
	qf.StringVar(&lc.APIKey, "key", "", "API key")
	qf.StringVar(&lc.OwnerID, "owner", "", "project or customer id to query")
	qf.StringVar(&queriesPath, "queries", "", "queries.jsonl (BEIR) to draw queries from")
	qf.IntVar(&lc.Concurrency, "concurrency", 4, "requests in flight")
	qf.IntVar(&lc.Requests, "requests", 500, "requests to send")
	qf.IntVar(&lc.TopK, "top-k", 5, "top_k of each query")

	cmd.AddCommand(indexCmd, ingestCmd, queryCmd)
	return cmd
}

// printResult prints v as JSON, or rows as an aligned two-column table.
func printResult(w io.Writer, asJSON bool, v any, rows [][2]string) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
