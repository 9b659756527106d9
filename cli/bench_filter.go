package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/docsift/docsift/bench"
	"github.com/docsift/docsift/eval"
	"github.com/spf13/cobra"
)

// benchFilterCmd is `docsift bench filter`: filtered query latency on a
// corpus. asJSON is bench's --json.
func benchFilterCmd(asJSON *bool) *cobra.Command {
	var fc bench.FilterConfig
	cmd := &cobra.Command{
		Use:   "filter",
		Short: "Query latency with a metadata filter that allows 1% of a corpus, beside the same queries unfiltered",
		Long: `Index a corpus file (BEIR corpus.jsonl) in a throwaway data directory with
every passage labelled group = its position modulo --groups, then time the
retrieval of /query/* (query embedding, index, store reads; no HTTP, no
answer) filtered to one group, beside the same queries unfiltered, and
check that each filtered query returned top_k chunks of its group.`,
		Example: `  docsift bench filter --corpus ../shared/data/msmarco-5k/corpus.jsonl --queries ../shared/data/msmarco-5k/queries.jsonl`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fc.Corpus == "" {
				return errors.New("--corpus is required")
			}
			fc.Progress = os.Stderr
			fc.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			res, err := bench.Filter(cmd.Context(), fc)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), *asJSON, res, filterRows(res))
		},
	}
	f := cmd.Flags()
	f.StringVar(&fc.Corpus, "corpus", "", "BEIR corpus.jsonl")
	f.StringVar(&fc.Queries, "queries", "", "BEIR queries.jsonl (default: the first words of the first 50 passages)")
	f.IntVar(&fc.Groups, "groups", bench.DefaultFilterGroups, "groups the passages are labelled with; a filter allows one")
	f.IntVar(&fc.Rounds, "rounds", bench.DefaultFilterRounds, "passes over the queries")
	f.IntVar(&fc.TopK, "top-k", eval.DefaultTopK, "top_k of each query")
	f.IntVar(&fc.Workers, "workers", 0, "indexing workers (default: number of CPUs)")
	return cmd
}

// filterRows are bench filter's figures as table rows.
func filterRows(res *bench.FilterResult) [][2]string {
	return [][2]string{
		{"corpus", fmt.Sprintf("%d documents, %d chunks, in %d groups (a filter allows %.1f%%)", res.Documents, res.Chunks, res.Groups, 100*res.Selectivity)},
		{"queries", fmt.Sprintf("%d of each kind, top_k %d, embedder %s", res.Queries, res.TopK, res.Embedder)},
		{"filtered p50", fmt.Sprintf("%.2f ms", res.FilteredP50Ms)},
		{"filtered p95", fmt.Sprintf("%.2f ms", res.FilteredP95Ms)},
		{"unfiltered p50", fmt.Sprintf("%.2f ms", res.UnfilteredP50Ms)},
		{"unfiltered p95", fmt.Sprintf("%.2f ms", res.UnfilteredP95Ms)},
		{"full results", fmt.Sprintf("%.1f%% of filtered queries returned top_k chunks, all of their group", 100*res.FullResults)},
	}
}
