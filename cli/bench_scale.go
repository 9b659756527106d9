package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/docsift/docsift/bench"
	"github.com/spf13/cobra"
)

// benchScaleCmd is `docsift bench scale`: one owner of many chunks through
// a child server, measured as a user of one VM would see it.
func benchScaleCmd(asJSON *bool) *cobra.Command {
	var cfg bench.ScaleConfig
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Capacity: ingest rate, memory per chunk, snapshot size, query latency and restart time of N chunks, in one owner or spread over customers",
		Long: `Start docsift serve as a child process on a throwaway data directory
(built-in embedder, extractive answers), upload synthetic text documents
through the HTTP API until one owner holds --chunks chunks (or, with
--customers, that many customers of the project hold them between them,
each document going to the next), and measure:
ingest chunks/s, the CPU each document cost the server and the
uploaders and what the server wrote to disk per chunk (and how much of
that the index's saves, and how long they kept chunks waiting to be
added), the server's anonymous memory (RssAnon: what it
holds itself, not the database's file mapping) and per chunk, and the
most of it sampled during the ingest, the
snapshot's and its segments' sizes, query p50/p99 with 1 and 8
clients after 1,000 other queries (each query 2–4 words of one document,
the rarer the likelier, so that its terms occur in as many chunks as
real queries' do; each asked once, new to the server as most users'
queries are) and the server's own from its access log, the CPU
each query cost the server and the clients, the time from the
process's start to its first answer after kill -9 and after a clean
restart, how long the clean stop took (it writes every changed owner's
snapshot), the server's memory maps, and how long the owner's other
reads take at its size (a page of GET /documents, an upload through a
hosted page and that page's list of its uploads).`,
		Example: `  docsift bench scale --chunks 100000
  docsift bench scale --chunks 1000000 --json
  docsift bench scale --chunks 100000 --customers 5000
  docsift bench scale --corpus ../shared/data/msmarco-5k/corpus.jsonl --uploaders 32`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := atLeast(1, flagInt{"--chunks", cfg.Chunks}, flagInt{"--words", cfg.Words}, flagInt{"--uploaders", cfg.Uploaders}); err != nil {
				return err
			}
			cfg.Progress = os.Stderr
			// Interrupted, it still stops its child servers and removes
			// their data.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := bench.Scale(ctx, cfg)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), *asJSON, res, scaleRows(res))
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Chunks, "chunks", bench.ScaleDefaultChunks, "chunks in the owner")
	f.IntVar(&cfg.Words, "words", bench.ScaleDefaultWords, "words per document (up to 250 is one chunk each)")
	f.IntVar(&cfg.Uploaders, "uploaders", bench.ScaleDefaultUploaders, "uploads in flight")
	f.StringVar(&cfg.Corpus, "corpus", "", "upload the documents of a BEIR corpus.jsonl, each once, instead of synthetic text (--chunks and --words then do not apply)")
	f.IntVar(&cfg.Customers, "customers", 0, "spread the documents over this many customers, each an owner with an index of its own (0: the project owns them all)")
	f.StringVar(&cfg.Dir, "dir", "", "keep the servers' data and logs, and the queries run (queries.jsonl), in this new or empty directory (default: a temporary one, removed)")
	return cmd
}

// scaleRows are bench scale's figures as table rows.
func scaleRows(res *bench.ScaleResult) [][2]string {
	snapshot := "none at kill"
	if res.SnapshotAtKill {
		snapshot = "a periodic one"
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	rows := [][2]string{
		{"chunks", chunksLine(res)},
		{"ingest", fmt.Sprintf("%.0f chunks/s (%.1f s)", res.IngestChunksPerSecond, res.IngestSeconds)},
		{"CPU per document", fmt.Sprintf("%.3f ms in the server, %.3f ms in the uploaders", res.IngestServerCPUMsPerDoc, res.IngestUploaderCPUMsPerDoc)},
		{"written during ingest", fmt.Sprintf("%.1f KB/chunk, of which index saves %.1f KB", res.IngestWrittenBytesPerChunk/1024, res.IngestIndexWrittenBytesPerChunk/1024)},
		{"index saves during ingest", fmt.Sprintf("held chunks %.1f s of the %.1f s (moments of each save, and a whole snapshot's move)", res.IngestIndexSaveSeconds, res.IngestSeconds)},
		{"memory after ingest", fmt.Sprintf("%.0f MB anonymous, %.0f bytes/chunk (during it, at most %.0f MB)", mb(res.RSSAnonAfterIngestBytes), res.RSSAnonAfterIngestPerChunk, mb(res.RSSAnonPeakIngestBytes))},
		{"memory after restart", fmt.Sprintf("%.0f MB anonymous, %.0f bytes/chunk (and %.0f MB file-backed)", mb(res.RSSAnonBytes), res.RSSAnonPerChunk, mb(res.RSSFileBytes))},
		{"database", fmt.Sprintf("%.1f MB, %.0f bytes/chunk", mb(res.DatabaseBytes), float64(res.DatabaseBytes)/float64(max(res.Chunks, 1)))},
		{"snapshot", fmt.Sprintf("%.1f MB, and segments of %.1f MB", mb(res.SnapshotBytes), mb(res.SegmentBytes))},
		{"new queries, 1 client", latency(res.Query1)},
		{"new queries, 8 clients", latency(res.Query8)},
		{"CPU per query", fmt.Sprintf("%.2f ms in the server, %.2f ms in the clients (8 clients)", res.Query8.ServerCPUMs, res.Query8.ClientCPUMs)},
		{"other reads", fmt.Sprintf("a page of documents %.1f ms, an upload through a hosted page %.1f ms, its list of uploads %.1f ms", res.Reads.ListPageMs, res.Reads.SessionUploadMs, res.Reads.SessionJobsMs)},
		{"first query after kill -9", fmt.Sprintf("%.2f s (snapshot: %s)", res.FirstQueryAfterKillSeconds, snapshot)},
		{"every chunk found after kill -9", fmt.Sprintf("%.2f s", res.CaughtUpAfterKillSeconds)},
		{"clean stop", fmt.Sprintf("%.2f s (writing the snapshots)", res.StopSeconds)},
		{"first query after restart", fmt.Sprintf("%.2f s (from the shutdown snapshot)", res.FirstQueryAfterRestartSeconds)},
		{"memory maps", fmt.Sprintf("%d (the kernel allows 65,530 a process unless vm.max_map_count says otherwise)", res.MemoryMaps)},
		{"Go heap in use", fmt.Sprintf("%.0f bytes/chunk after ingest, %.0f after restart", res.GoHeapInuseAfterIngestPerChunk, res.GoHeapInusePerChunk)},
	}
	for _, p := range res.MemoryParts {
		rows = append(rows, [2]string{"  index " + p.Part, fmt.Sprintf("%.0f bytes/chunk heap, %.0f mapped", p.HeapPerChunk, p.MappedPerChunk)})
	}
	return rows
}

// chunksLine is the chunks line of bench scale's table.
func chunksLine(res *bench.ScaleResult) string {
	if res.Customers > 0 {
		return fmt.Sprintf("%d in %d documents of %d customers", res.Chunks, res.Documents, res.Customers)
	}
	return fmt.Sprintf("%d in %d documents", res.Chunks, res.Documents)
}

// latency is a query run's line of bench scale's table.
func latency(q bench.QueryLatency) string {
	return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms (%d errors); in the server p50 %.2f ms, p99 %.2f ms",
		q.P50Ms, q.P99Ms, q.Errors, q.ServerP50Ms, q.ServerP99Ms)
}
