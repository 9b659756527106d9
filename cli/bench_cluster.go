package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/docsift/docsift/bench"
	"github.com/spf13/cobra"
)

// benchClusterCmd is `docsift bench cluster`: the cluster mode against one
// node on bbolt, on the same work, in one run.
func benchClusterCmd(asJSON *bool) *cobra.Command {
	var cfg bench.ClusterConfig
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Cluster mode against one node on bbolt: ingest chunks/s, queries/s, and failover after kill -9 of a node",
		Long: `Run the same work through one docsift serve on bbolt (the reference), then
through --nodes docsift serve processes sharing one PostgreSQL, all as
child processes on throwaway data directories (built-in embedder,
extractive answers). The work: --customers customers of one project,
--docs synthetic text documents each, uploaded with several in flight
through each node in turn until every job SUCCEEDED (ingest chunks/s), then
queries from 8 clients, each to the next node in turn and for the next
customer in turn (queries/s, p50/p99).

Then the failover: documents are uploaded for the customers of the node
that holds the most of them, the node is killed with SIGKILL, and the run
times how soon each of those customers answers a query through a surviving
node (max and median) and how soon all those jobs SUCCEEDED.

Without --store, a throwaway PostgreSQL is started from the installed
server binaries (initdb, pg_ctl: Debian's postgresql package) in a
temporary directory and removed after.`,
		Example: `  docsift bench cluster
  docsift bench cluster --nodes 5 --customers 40 --docs 200 --json
  docsift bench cluster --store postgres://docsift@db.internal/bench_empty`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := atLeast(2, flagInt{"--nodes", cfg.Nodes}); err != nil {
				return err
			}
			cfg.Progress = os.Stderr
			// Interrupted, it still stops its child servers and removes
			// their data and the throwaway PostgreSQL.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := bench.Cluster(ctx, cfg)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), *asJSON, res, clusterRows(res))
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Nodes, "nodes", bench.ClusterDefaultNodes, "nodes of the cluster (at least 2)")
	f.IntVar(&cfg.Customers, "customers", bench.ClusterDefaultCustomers, "customers, each an owner with an index of its own")
	f.IntVar(&cfg.Docs, "docs", bench.ClusterDefaultDocs, "documents per customer")
	f.IntVar(&cfg.Words, "words", bench.ScaleDefaultWords, "words per document (up to 250 is one chunk each)")
	f.IntVar(&cfg.Uploaders, "uploaders", bench.ScaleDefaultUploaders, "uploads in flight")
	f.StringVar(&cfg.StoreURL, "store", "", "an empty PostgreSQL database (postgres://…) the run may fill (default: a throwaway server started from the installed binaries)")
	return cmd
}

// clusterRows are bench cluster's figures as table rows.
func clusterRows(res *bench.ClusterResult) [][2]string {
	ref, c, f := res.Reference, res.Cluster, res.Failover
	oneNode := "1 node, bbolt"
	nodes := fmt.Sprintf("%d nodes, PostgreSQL", c.Nodes)
	queries := func(r bench.ClusterRun) string {
		q := r.Queries
		s := fmt.Sprintf("%.0f queries/s, p50 %.2f ms, p99 %.2f ms, %d clients (%d errors)", q.RequestsPerSecond, q.P50Ms, q.P99Ms, q.Concurrency, q.Errors)
		if q.FirstError != "" {
			s += "; first error: " + q.FirstError
		}
		return s
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	return [][2]string{
		{"work", fmt.Sprintf("%d customers, %d documents, %d chunks", res.Customers, res.Documents, c.Chunks)},
		{"ingest, " + oneNode, fmt.Sprintf("%.0f chunks/s (%.1f s)", ref.IngestChunksPerSecond, ref.IngestSeconds)},
		{"ingest, " + nodes, fmt.Sprintf("%.0f chunks/s (%.1f s): %.2f× the single node", c.IngestChunksPerSecond, c.IngestSeconds, res.IngestRatio)},
		{"queries, " + oneNode, queries(ref)},
		{"queries, " + nodes, queries(c) + fmt.Sprintf(": %.2f× the single node", res.QueryRatio)},
		{"memory after ingest", fmt.Sprintf("%.0f MB anonymous on 1 node; %.0f MB on %d nodes together", mb(ref.RSSAnonBytes), mb(c.RSSAnonBytes), c.Nodes)},
		{"failover", fmt.Sprintf("kill -9 of node %s, holding %d of %d customers", f.Node, f.Customers, res.Customers)},
		{"  first answers", fmt.Sprintf("max %.2f s, median %.2f s after the kill, each customer through a surviving node", f.FirstAnswerMaxSeconds, f.FirstAnswerMedianSeconds)},
		{"  pending jobs", fmt.Sprintf("%d of %d uploads pending at the kill; all SUCCEEDED %.1f s after it", f.JobsPendingAtKill, f.Jobs, f.JobsSucceededSeconds)},
	}
}
