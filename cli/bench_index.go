package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/docsift/docsift/bench/indexbench"
	"github.com/spf13/cobra"
)

// benchIndexCmd is `docsift bench index`: the vector index alone, on
// synthetic vectors or .fvecs files. asJSON is bench's --json.
func benchIndexCmd(asJSON *bool) *cobra.Command {
	var cfg indexbench.Config
	var queries string
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Recall, search latency, build rate and snapshot load of the vector index, on synthetic vectors or .fvecs files",
		Example: `  docsift bench index --n 100000 --dim 384
  docsift bench index --vectors base.fvecs --queries query.fvecs --ground-truth groundtruth.ivecs
  docsift bench index --export /tmp/ann    # the synthetic data as .fvecs, for other libraries`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkIndexFlags(cfg); err != nil {
				return err
			}
			// --queries is a count for synthetic data, or a file beside --vectors.
			if n, err := strconv.Atoi(queries); err == nil {
				cfg.Queries = n
			} else {
				cfg.QueriesFile = queries
			}
			res, err := indexbench.Run(cfg, os.Stderr)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), *asJSON, res, indexRows(res))
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.N, "n", indexbench.DefaultN, "vectors in the index")
	f.IntVar(&cfg.Dim, "dim", indexbench.DefaultDim, "dimensions")
	f.StringVar(&queries, "queries", strconv.Itoa(indexbench.DefaultQueries), "queries timed and scored: a count of synthetic ones, or an .fvecs file with --vectors")
	f.StringVar(&cfg.VectorsFile, "vectors", "", ".fvecs file of the vectors to index, instead of synthetic ones")
	f.StringVar(&cfg.GroundTruthFile, "ground-truth", "", ".ivecs file of each query's exact neighbours (default: computed by brute force)")
	f.IntVar(&cfg.EfConstruction, "ef-construction", 0, "the graph's insert candidate list (default: the index's for a model's vectors)")
	f.IntSliceVar(&cfg.Ef, "ef", nil, "search candidate lists to measure, one pass of the queries each, e.g. 160,320,640 (default: the index's)")
	f.StringVar(&cfg.ExportDir, "export", "", "write the vectors, queries and ground truth as .fvecs/.ivecs files to this directory")
	return cmd
}

// checkIndexFlags refuses sizes and candidate lists that measure nothing.
func checkIndexFlags(cfg indexbench.Config) error {
	if err := atLeast(1, flagInt{"--n", cfg.N}, flagInt{"--dim", cfg.Dim}); err != nil {
		return err
	}
	if err := atLeast(0, flagInt{"--ef-construction", cfg.EfConstruction}); err != nil {
		return err
	}
	for _, ef := range cfg.Ef {
		if err := atLeast(1, flagInt{"--ef", ef}); err != nil {
			return err
		}
	}
	return nil
}

// indexRows are bench index's figures as table rows.
func indexRows(res indexbench.Result) [][2]string {
	rows := [][2]string{
		{"vectors", fmt.Sprintf("%d × %d dims, %d queries", res.N, res.Dim, res.Queries)},
		{"recall@10", fmt.Sprintf("%.4f (ef %d)", res.RecallAt10, res.Ef)},
		{"search p50", fmt.Sprintf("%.3f ms (single thread, %.0f queries/s)", res.SearchP50Ms, res.SearchQPS)},
		{"search p99", fmt.Sprintf("%.3f ms", res.SearchP99Ms)},
	}
	for _, p := range res.Curve[min(1, len(res.Curve)):] {
		rows = append(rows, [2]string{fmt.Sprintf("ef %d", p.Ef), fmt.Sprintf("recall@10 %.4f, p50 %.3f ms, p99 %.3f ms, %.0f queries/s", p.RecallAt10, p.SearchP50Ms, p.SearchP99Ms, p.SearchQPS)})
	}
	return append(rows, [][2]string{
		{"build", fmt.Sprintf("%.0f vectors/s (%.1f s, efConstruction %d)", res.BuildVectorsPerSecond, res.BuildSeconds, res.EfConstruction)},
		{"snapshot load", fmt.Sprintf("%.2f s, %.1f× faster than rebuilding", res.SnapshotLoadSeconds, res.SnapshotLoadSpeedup)},
		{"memory", fmt.Sprintf("%.0f bytes/vector", res.BytesPerVector)},
	}...)
}
