package cli

import (
	"errors"
	"fmt"

	"github.com/docsift/docsift/bench"
	"github.com/docsift/docsift/eval"
	"github.com/spf13/cobra"
)

// benchQueryCmd is `docsift bench query`: HTTP query latency against a
// running server. asJSON is bench's --json.
func benchQueryCmd(asJSON *bool) *cobra.Command {
	var cfg bench.LoadConfig
	var queriesPath string
	cmd := &cobra.Command{
		Use:   "query",
		Short: "End-to-end HTTP query latency against a running server",
		Example: `  docsift bench query --url http://127.0.0.1:8080 --key dsk_… --owner prj_… \
    --queries queries.jsonl --concurrency 4 --requests 500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.APIKey == "" || cfg.OwnerID == "" || queriesPath == "" {
				return errors.New("--key, --owner and --queries are required")
			}
			if err := atLeast(1, flagInt{"--top-k", cfg.TopK}, flagInt{"--requests", cfg.Requests}, flagInt{"--concurrency", cfg.Concurrency}); err != nil {
				return err
			}
			qs, err := eval.ReadQueries(queriesPath)
			if err != nil {
				return err
			}
			for _, q := range qs {
				cfg.Queries = append(cfg.Queries, q.Text)
			}
			res, err := bench.Query(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := printResult(cmd.OutOrStdout(), *asJSON, res, queryRows(res, cfg.Stream)); err != nil {
				return err
			}
			// Timings of failed requests would pass for a result.
			if res.Errors > 0 {
				return fmt.Errorf("%d of %d requests failed, the first: %s", res.Errors, res.Requests, res.FirstError)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.URL, "url", "http://"+defaultAddr, "server base URL")
	f.StringVar(&cfg.APIKey, "key", "", "API key")
	f.StringVar(&cfg.OwnerID, "owner", "", "project or customer id to query")
	f.StringVar(&queriesPath, "queries", "", "queries.jsonl (BEIR) to draw queries from")
	f.IntVar(&cfg.Concurrency, "concurrency", 4, "requests in flight")
	f.IntVar(&cfg.Requests, "requests", 500, "requests to send, taking the queries in turn: more requests than queries asks them again, which a server answers faster than new ones (it remembers their language)")
	f.IntVar(&cfg.TopK, "top-k", 5, "top_k of each query")
	f.BoolVar(&cfg.Stream, "stream", false, `ask for streamed answers ("stream": true) and time the first answer event as well as the whole`)
	f.DurationVar(&cfg.Timeout, "timeout", bench.DefaultQueryTimeout, "longest wait for one answer")
	return cmd
}

// queryRows are bench query's figures as table rows; streamed answers
// have their first event's latency too.
func queryRows(res *bench.LoadResult, stream bool) [][2]string {
	rows := [][2]string{
		{"requests", fmt.Sprintf("%d (%d errors) at concurrency %d", res.Requests, res.Errors, res.Concurrency)},
		{"throughput", fmt.Sprintf("%.1f requests/s", res.RequestsPerSecond)},
	}
	if stream {
		rows = append(rows,
			[2]string{"first token p50", fmt.Sprintf("%.2f ms", res.FirstTokenP50Ms)},
			[2]string{"first token p99", fmt.Sprintf("%.2f ms", res.FirstTokenP99Ms)},
			[2]string{"whole answer p50", fmt.Sprintf("%.2f ms", res.P50Ms)},
			[2]string{"whole answer p99", fmt.Sprintf("%.2f ms", res.P99Ms)})
	} else {
		rows = append(rows,
			[2]string{"latency p50", fmt.Sprintf("%.2f ms", res.P50Ms)},
			[2]string{"latency p99", fmt.Sprintf("%.2f ms", res.P99Ms)})
	}
	if res.FirstError != "" {
		rows = append(rows, [2]string{"first error", res.FirstError})
	}
	return rows
}
