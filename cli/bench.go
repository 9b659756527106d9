package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/pdf"
	"github.com/spf13/cobra"
)

func benchCmd() *cobra.Command {
	cmd := groupCmd("bench", "Measure speed: the vector index, ingestion, queries against a server, OCR")
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
			if err := atLeast(1, flagInt{"--n", ic.N}, flagInt{"--dim", ic.Dim}); err != nil {
				return err
			}
			if err := atLeast(0, flagInt{"--ef-construction", ic.EfConstruction}); err != nil {
				return err
			}
			for _, ef := range ic.Ef {
				if err := atLeast(1, flagInt{"--ef", ef}); err != nil {
					return err
				}
			}
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
			rows := [][2]string{
				{"vectors", fmt.Sprintf("%d × %d dims, %d queries", res.N, res.Dim, res.Queries)},
				{"recall@10", fmt.Sprintf("%.4f (ef %d)", res.RecallAt10, res.Ef)},
				{"search p50", fmt.Sprintf("%.3f ms (single thread, %.0f queries/s)", res.SearchP50Ms, res.SearchQPS)},
				{"search p99", fmt.Sprintf("%.3f ms", res.SearchP99Ms)},
			}
			for _, p := range res.Curve[min(1, len(res.Curve)):] {
				rows = append(rows, [2]string{fmt.Sprintf("ef %d", p.Ef), fmt.Sprintf("recall@10 %.4f, p50 %.3f ms, p99 %.3f ms, %.0f queries/s", p.RecallAt10, p.SearchP50Ms, p.SearchP99Ms, p.SearchQPS)})
			}
			rows = append(rows, [][2]string{
				{"build", fmt.Sprintf("%.0f vectors/s (%.1f s, efConstruction %d)", res.BuildVectorsPerSecond, res.BuildSeconds, res.EfConstruction)},
				{"snapshot load", fmt.Sprintf("%.2f s, %.1f× faster than rebuilding", res.SnapshotLoadSeconds, res.SnapshotLoadSpeedup)},
				{"memory", fmt.Sprintf("%.0f bytes/vector", res.BytesPerVector)},
			}...)
			return printResult(cmd.OutOrStdout(), asJSON, res, rows)
		},
	}
	indexCmd.Flags().IntVar(&ic.N, "n", index.BenchDefaultN, "vectors in the index")
	indexCmd.Flags().IntVar(&ic.Dim, "dim", index.BenchDefaultDim, "dimensions")
	indexCmd.Flags().StringVar(&queries, "queries", strconv.Itoa(index.BenchDefaultQueries), "queries timed and scored: a count of synthetic ones, or an .fvecs file with --vectors")
	indexCmd.Flags().StringVar(&ic.VectorsFile, "vectors", "", ".fvecs file of the vectors to index, instead of synthetic ones")
	indexCmd.Flags().StringVar(&ic.GroundTruthFile, "ground-truth", "", ".ivecs file of each query's exact neighbours (default: computed by brute force)")
	indexCmd.Flags().IntVar(&ic.EfConstruction, "ef-construction", 0, "the graph's insert candidate list (default: the index's for a model's vectors)")
	indexCmd.Flags().IntSliceVar(&ic.Ef, "ef", nil, "search candidate lists to measure, one pass of the queries each, e.g. 160,320,640 (default: the index's)")
	indexCmd.Flags().StringVar(&ic.ExportDir, "export", "", "write the vectors, queries and ground truth as .fvecs/.ivecs files to this directory")

	var ingestCfg eval.IngestConfig
	var ingestModels modelOptions
	var raw bool
	ingestCmd := &cobra.Command{
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
			if ingestCfg.Corpus == "" && len(files) == 0 {
				return errors.New("give --corpus or files to ingest")
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			rec := &eval.EmbedRecorder{}
			ingestModels.ollama.HTTPClient = rec.Client()
			em, err := ingestModels.chooseEmbedder(cmd.Context(), nil, log)
			if err != nil {
				return err
			}
			if oe, ok := em.(*ollama.Embedder); ok && raw {
				ingestCfg.Recorder, ingestCfg.OllamaURL = rec, oe.Client().URL()
			}
			ingestCfg.Files, ingestCfg.Embedder, ingestCfg.Progress, ingestCfg.Log = files, em, os.Stderr, log
			res, err := eval.BenchIngest(cmd.Context(), ingestCfg)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, ingestRows(res))
		},
	}
	inf := ingestCmd.Flags()
	inf.StringVar(&ingestCfg.Corpus, "corpus", "", "BEIR corpus.jsonl")
	inf.IntVar(&ingestCfg.Workers, "workers", 0, "indexing workers (default: number of CPUs)")
	inf.IntVar(&ingestCfg.Uploaders, "uploaders", eval.ScaleDefaultUploaders, "documents submitted at once, as clients of the API submit them")
	inf.BoolVar(&ingestCfg.Again, "again", false, "upload everything a second time after the first pass (the embedding cache's effect, with a model server)")
	inf.BoolVar(&raw, "raw", true, "with an Ollama embedder, also time docsift's /api/embed requests sent straight to Ollama")
	inf.IntVar(&ingestCfg.Rounds, "rounds", 1, "runs, each in a fresh data dir, alternating docsift and raw Ollama first, for a machine whose load drifts; figures are per run")
	ingestModels.register(inf, false, llm.ModeBuiltin)

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
			if err := atLeast(1, flagInt{"--top-k", lc.TopK}, flagInt{"--requests", lc.Requests}, flagInt{"--concurrency", lc.Concurrency}); err != nil {
				return err
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
			}
			if lc.Stream {
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
			if err := printResult(cmd.OutOrStdout(), asJSON, res, rows); err != nil {
				return err
			}
			// Timings of failed requests would pass for a result.
			if res.Errors > 0 {
				return fmt.Errorf("%d of %d requests failed, the first: %s", res.Errors, res.Requests, res.FirstError)
			}
			return nil
		},
	}
	qf := queryCmd.Flags()
	qf.StringVar(&lc.URL, "url", "http://"+defaultAddr, "server base URL")
	qf.StringVar(&lc.APIKey, "key", "", "API key")
	qf.StringVar(&lc.OwnerID, "owner", "", "project or customer id to query")
	qf.StringVar(&queriesPath, "queries", "", "queries.jsonl (BEIR) to draw queries from")
	qf.IntVar(&lc.Concurrency, "concurrency", 4, "requests in flight")
	qf.IntVar(&lc.Requests, "requests", 500, "requests to send, taking the queries in turn: more requests than queries asks them again, which a server answers faster than new ones (it remembers their language)")
	qf.IntVar(&lc.TopK, "top-k", 5, "top_k of each query")
	qf.BoolVar(&lc.Stream, "stream", false, `ask for streamed answers ("stream": true) and time the first answer event as well as the whole`)
	qf.DurationVar(&lc.Timeout, "timeout", eval.DefaultQueryTimeout, "longest wait for one answer")

	var oc pdf.OCRBenchConfig
	ocrCmd := &cobra.Command{
		Use:   "ocr [PDF or folder ...]",
		Short: "OCR accuracy and pages per second: pages of PDFs with a text layer, scanned and read back",
		Long: `Scan pages of PDFs that have a text layer (render them to images at
each --dpi, as a clean scan), read the scans back through the extraction
worker with Tesseract, and compare with the text layer: character accuracy
is 1 − Levenshtein distance / characters, over whitespace-normalised text.`,
		Example: `  docsift bench ocr ../shared/data/pdf
  docsift bench ocr --pages 10 --dpi 300 manual.pdf`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if oc.Pages < 1 {
				return fmt.Errorf("--pages is %d: give at least 1", oc.Pages)
			}
			for _, dpi := range oc.DPIs {
				if dpi < 50 || dpi > 1200 {
					return fmt.Errorf("--dpi %d is not a scan resolution: give one from 50 to 1200", dpi)
				}
			}
			oc.Files = files
			res, err := pdf.RunOCRBench(cmd.Context(), oc, os.Stderr)
			if err != nil {
				return err
			}
			var rows [][2]string
			for _, r := range res.Runs {
				rows = append(rows,
					[2]string{fmt.Sprintf("%d dpi", r.DPI), fmt.Sprintf("accuracy %.2f%% over %d pages (%d characters); worst %.2f%% (%s)", 100*r.Accuracy, r.Pages, r.Characters, 100*r.WorstAccuracy, r.WorstPage)},
					[2]string{"", fmt.Sprintf("%.2f pages/s (%.1f s, one document at a time)", r.PagesPerSecond, r.Seconds)})
			}
			return printResult(cmd.OutOrStdout(), asJSON, res, rows)
		},
	}
	ocrCmd.Flags().IntVar(&oc.Pages, "pages", pdf.DefaultOCRBenchPages, "pages scanned per PDF, spread over those with text")
	ocrCmd.Flags().IntSliceVar(&oc.DPIs, "dpi", pdf.DefaultOCRBenchDPIs, "scan resolutions")
	ocrCmd.Flags().StringVar(&oc.OCR.Languages, "ocr-languages", pdf.DefaultOCRLanguages, "Tesseract languages, joined by +")

	cmd.AddCommand(indexCmd, ingestCmd, queryCmd, ocrCmd, benchFilterCmd(&asJSON), benchScaleCmd(&asJSON), benchClusterCmd(&asJSON))
	return cmd
}

// ingestRows are bench ingest's figures as table rows.
func ingestRows(res *eval.IngestResult) [][2]string {
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

// flagInt is a whole-number flag and its value.
type flagInt struct {
	name  string
	value int
}

// atLeast refuses the first flag under least, naming it: a benchmark of
// zero of something would run and report nothing, or a default.
func atLeast(least int, flags ...flagInt) error {
	for _, f := range flags {
		if f.value < least {
			return fmt.Errorf("%s is %d: give %d or more", f.name, f.value, least)
		}
	}
	return nil
}
