package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docsift/docsift/drive"
	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/internal/runtimepolicy"
	"github.com/docsift/docsift/metrics"
	"github.com/docsift/docsift/outbound"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/webhook"
	"github.com/docsift/docsift/websearch"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/cluster"
	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/docsift/docsift/store/postgres"
	"github.com/spf13/cobra"
)

const (
	defaultAddr = "127.0.0.1:8080"
	// shutdownGrace is how long requests and jobs get to finish on SIGTERM
	// before jobs are cancelled and requeued.
	shutdownGrace = 20 * time.Second
)

func serveCmd(version string) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API and the indexing workers",
		Long: `Run the HTTP API and the indexing workers.

Every flag can also be set as DOCSIFT_<FLAG> in the environment, e.g.
DOCSIFT_ADDR=0.0.0.0:8080. On first start with an empty data directory a
project named "default" is created and its API key printed once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), o, version, cmd.OutOrStdout()) },
	}
	o.register(cmd.Flags())
	return cmd
}

func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var opts slog.HandlerOptions
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug", "info", "warn", "error":
		if err := l.UnmarshalText([]byte(level)); err != nil {
			return nil, err
		}
		opts.Level = l
	default:
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, &opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

func serve(ctx context.Context, o serveOptions, version string, out io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	logTo, closeLog, err := logOutput(o.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	log, err := newLogger(o.logFormat, o.logLevel, logTo)
	if err != nil {
		return err
	}
	defer profileCPU(log)()
	stopPolicy, err := o.applyRuntimePolicy(log)
	if err != nil {
		return err
	}
	defer stopPolicy()
	ocr, err := o.ocrConfig(ctx, log)
	if err != nil {
		return err
	}
	// Workers cannot write to the log: what their sandbox holds on this
	// kernel is told once, here.
	if sandbox, err := pdf.CheckSandbox(ctx, ocr, o.data); err != nil {
		log.Warn("documents are read with more access than they need", "sandbox", sandbox, "err", err)
	} else {
		log.Info("documents are read in a sandbox", "sandbox", sandbox)
	}
	driveClient, err := o.driveClient(log)
	if err != nil {
		return err
	}
	if driveClient != nil {
		// Grants live in memory: revoke them at Google before they are lost.
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := driveClient.Close(ctx); err != nil {
				log.Warn("revoking Google Drive grants at shutdown failed", "err", err)
			}
		}()
	}
	st, pg, err := openStore(o.storeURL, o.data)
	if err != nil {
		return err
	}
	defer st.Close()
	if s, ok := st.(*bolt.Store); ok && s.UpgradedFrom() > 0 {
		log.Info("data upgraded from an older docsift: older versions now refuse it (restore a backup taken before to go back)", "data", o.data, "from_schema", s.UpgradedFrom())
	}
	// Bound before the first start prints its key and the curl lines that
	// name this address, which another process may hold.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	defer ln.Close() // closed already once served; this covers the returns before
	if err := firstStart(st, o.baseURL, out); err != nil {
		return err
	}
	var member *cluster.Member
	if pg != nil {
		if o.nodeURL == "" {
			o.nodeURL = defaultNodeURL(o.addr)
		}
		if member, err = cluster.JoinMember(pg, o.nodeURL, postgres.HeartbeatInterval, log); err != nil {
			return err
		}
		log.Info("joined the cluster", "node", member.Node().ID(), "url", redact.URL(o.nodeURL), "live_nodes", len(member.Node().Live()))
		// Deferred before the engine's shutdown, so it runs after it:
		// the node leaves once its workers have stopped.
		defer member.Leave(context.Background())
	}

	embedder, err := o.models.chooseEmbedder(ctx, st, log)
	if err != nil {
		return err
	}
	// In the background: with a model server on a CPU the probe takes
	// seconds, and the server need not wait for a log line. Its batches
	// queue behind nothing yet and ahead of no query (queries skip the
	// ingest queue).
	probeCtx, cancelProbe := context.WithCancel(ctx)
	probed := make(chan struct{})
	go func() { defer close(probed); logEmbedSpeed(probeCtx, embedder, log) }()
	defer func() { cancelProbe(); <-probed }()
	answerer, err := o.models.chooseAnswerer(ctx, log)
	if err != nil {
		return err
	}
	m := metrics.New()
	cfg := ingest.Config{Workers: o.workers, MaxAttempts: o.maxAttempts, RetryMax: o.retryMax, ExtractTimeout: o.extractTimeout, Metrics: m, OCR: ocr,
		Limits: pdf.Limits{Pages: o.maxPages, PageText: int(o.maxPageText), Text: int64(o.maxDocumentText)}}
	cfg.Embedders = o.models.standbyEmbedders(embedder, st, log)
	indexDir := filepath.Join(o.data, "index")
	if cfg.Indexes.Index, err = o.indexOptions(indexDir); err != nil {
		return err
	}
	if member != nil {
		cfg.Indexes.Holds = member.Node().Holds
	}
	engine := ingest.New(st, embedder, indexDir, cfg, log)
	if err := engine.Start(); err != nil {
		return err
	}
	if member != nil {
		clusterCtx, stopCluster := context.WithCancel(ctx)
		wait := member.Run(clusterCtx, clusterEngine{engine})
		defer func() { stopCluster(); wait() }()
	}
	guard, err := o.webhooks.guard()
	if err != nil {
		engine.Shutdown(context.Background())
		return err
	}
	if guard.AllowPrivate || len(guard.Allow) > 0 {
		log.Info("webhooks may go to addresses inside this server's network", "allow_private", guard.AllowPrivate, "allow_cidr", strings.Join(o.webhooks.cidrs, ","))
	}
	hooks := webhook.New(st, engine.Ended, webhook.Config{FirstRetry: o.webhookFirstRetry, Guard: guard, ShowReplies: o.webhookShowReplies}, log)
	if err := hooks.Start(); err != nil {
		engine.Shutdown(context.Background())
		return err
	}
	defer hooks.Shutdown()
	// File uploads are spooled beside the files they become (a rename
	// takes them in); what a crash left there is of no use.
	spool := filepath.Join(o.data, "spool")
	if n, err := store.SweepSpool(spool); err != nil {
		log.Warn("could not remove uploads a crash left half received", "dir", spool, "err", err)
	} else if n > 0 {
		log.Info("removed uploads a crash left half received", "files", n)
	}
	scfg := o.serverConfig(spool, version, guard)
	var web search.WebSearcher
	if o.searxngURL != "" {
		sx, err := websearch.NewSearx(o.searxngURL, nil)
		if err != nil {
			return err
		}
		web = sx
	}
	scfg.Metrics = m
	scfg.Drive = driveClient
	if member != nil {
		scfg.Cluster, scfg.RateBuckets = member.Node(), pg
	}
	queries := search.New(engine, st, answerer, web, log)
	queries.SetMetrics(m)
	queries.SetQueryEmbedTimeout(o.queryEmbedTimeout)
	queries.SetMaxSearches(o.maxSearches)
	api := server.New(scfg, st, engine, queries, log)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	closeAdmin, err := admin.Listen(o.data, st, engine, func(ctx context.Context, url string) error {
		return webhook.CheckAddress(ctx, guard, url)
	})
	if err != nil {
		return err
	}
	defer closeAdmin()

	log.Info("docsift listening", "addr", ln.Addr().String(), "base_url", redact.URL(o.baseURL), "data", o.data, "version", version)
	if o.metricsAddr != "" {
		stopMetrics, err := serveMetrics(o.metricsAddr, m, log)
		if err != nil {
			ln.Close()
			engine.Shutdown(context.Background())
			return err
		}
		defer stopMetrics()
	}
	srv := api.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- api.Serve(srv, ln) }()
	select {
	case err := <-errc:
		engine.Shutdown(context.Background())
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop() // a second signal stops the process at once, as signals do
	log.Info("shutting down: finishing requests and jobs (a second signal stops at once)", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("requests still open at the deadline were cut", "err", err)
	}
	if err := engine.Shutdown(sctx); err != nil {
		log.Error("index snapshot at shutdown failed; the next start rebuilds from the store", "err", err)
	}
	hooks.Shutdown() // after the jobs, whose ends queue deliveries; sends none of them now
	log.Info("stopped")
	return nil
}

// firstStart creates the "default" project on an empty data dir and prints
// its key once, in a line that puts it in a shell variable: the commands
// after it use the variable, so the key appears once in a service's log.
func firstStart(st store.Backend, baseURL string, w io.Writer) error {
	ps, err := st.Projects()
	if err != nil || len(ps) > 0 {
		return err
	}
	p, secret, err := st.CreateProject("default")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `
docsift: created project "default" (%s). Its API key is shown this once:

  export DOCSIFT_API_KEY=%s

Try it:
  curl -s %s/upload/text -H "Authorization: Bearer $DOCSIFT_API_KEY" -H 'Content-Type: application/json' \
    -d '{"owner_id": "%s", "text": "docsift indexes documents for semantic search."}'
  curl -s %s/query/project -H "Authorization: Bearer $DOCSIFT_API_KEY" -H 'Content-Type: application/json' \
    -d '{"project_id": "%s", "query": "what does docsift do?"}'

`, p.ID, secret, baseURL, p.ID, baseURL, p.ID)
	return nil
}

// serveMetrics serves m at /metrics on addr, a listener of its own so that
// the public API never exposes it. The returned function stops it.
func serveMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: server.DefaultReadHeaderTimeout, IdleTimeout: server.DefaultIdleTimeout}
	go srv.Serve(ln)
	log.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { srv.Close() }, nil
}

// driveClient is the OAuth client of Google Drive import, or nil when none
// is configured. The id and the secret go together.
func (o serveOptions) driveClient(log *slog.Logger) (*drive.Client, error) {
	switch {
	case o.googleClientID == "" && o.googleClientSecret == "":
		return nil, nil
	case o.googleClientID == "" || o.googleClientSecret == "":
		return nil, errors.New("--google-client-id and --google-client-secret go together: set both to offer Google Drive import on upload pages, or neither")
	}
	redirect := server.DriveRedirectURL(o.baseURL)
	c, err := drive.New(drive.Config{ClientID: o.googleClientID, ClientSecret: o.googleClientSecret, RedirectURL: redirect, Log: log})
	if err != nil {
		return nil, err
	}
	log.Info("Google Drive import is on; the OAuth client must list this authorized redirect URI", "redirect_uri", redirect)
	return c, nil
}

// ocrConfig checks --ocr-languages against the installed Tesseract: a
// language whose pack is missing stops the start with the package to
// install, while no Tesseract at all is a warning, since text documents
// do not need it (scans and images then fail, saying what to install).
func (o serveOptions) ocrConfig(ctx context.Context, log *slog.Logger) (pdf.OCR, error) {
	cfg := pdf.OCR{Languages: o.ocrLanguages}
	installed, err := pdf.CheckOCR(ctx, cfg)
	switch {
	case errors.Is(err, pdf.ErrOCRUnavailable):
		log.Warn("OCR is off: scanned PDFs and images fail until Tesseract is installed", "err", err)
		return cfg, nil
	case err != nil:
		return cfg, fmt.Errorf("--ocr-languages: %w", err)
	}
	langs, _ := pdf.ParseOCRLanguages(o.ocrLanguages) // checked by CheckOCR
	log.Info("OCR reads pages without a text layer and images", "languages", strings.Join(langs, "+"), "installed", strings.Join(installed, ","))
	return cfg, nil
}

// applyRuntimePolicy sets the Go memory limit and the collector's
// headroom from the flags (internal/runtimepolicy holds the why of
// each), and says which were chosen; stop ends the headroom's controller.
func (o serveOptions) applyRuntimePolicy(log *slog.Logger) (stop func(), err error) {
	memLimit, err := resolveMemoryLimit(o.memoryLimit, os.LookupEnv, admin.AvailableMemory)
	if err != nil {
		return nil, fmt.Errorf("--memory-limit: %w", err)
	}
	limit := runtimepolicy.LimitMemory(memLimit.bytes, memLimit.keep)
	if limit < math.MaxInt64 {
		log.Info("Go memory limit", "limit", sizeLabel(limit), "from", memLimit.from)
	} else {
		log.Info("Go memory limit is off", "from", memLimit.from)
	}
	headroom, err := resolveGCHeadroom(o.gcHeadroom, os.LookupEnv, limit)
	if err != nil {
		return nil, fmt.Errorf("--gc-headroom: %w", err)
	}
	stop = runtimepolicy.KeepGCHeadroom(headroom.bytes, nil)
	if headroom.bytes > 0 {
		log.Info("garbage collector headroom", "headroom", sizeLabel(headroom.bytes), "from", headroom.from)
	} else {
		log.Info("garbage collector headroom is off", "from", headroom.from)
	}
	return stop, nil
}

// serverConfig is the API's configuration from the flags.
func (o serveOptions) serverConfig(spool, version string, guard *outbound.Guard) server.Config {
	return server.Config{
		BaseURL: o.baseURL, SpoolDir: spool, MaxFileBytes: int64(o.maxFile), MaxTextBytes: int64(o.maxText),
		SessionTTL: o.sessionTTL, SubpageTTL: o.subpageTTL, Version: version,
		RateLimit: o.rateLimit, SessionRateLimit: o.sessionRateLimit, SessionMaxPending: o.sessionMaxPending,
		SubpageBudget: int64(o.subpageBudget), MaxSubpagesPerProject: o.maxSubpages,
		MaxCustomersPerProject: o.maxCustomers, MaxDocumentsPerProject: o.maxDocuments,
		MaxStoredBytesPerProject: int64(o.maxStoredBytes), MaxSessionsPerProject: o.maxSessions,
		Conns:        server.ConnLimits{MaxConns: o.maxConns, MaxConnsPerClient: o.maxConnsPerClient, WriteStall: o.writeStall},
		WebhookGuard: guard, ShowWebhookReplies: o.webhookShowReplies,
	}
}

// indexOptions are the owners' indexes' memory maps and vector files
// from the flags.
func (o serveOptions) indexOptions(indexDir string) (index.Options, error) {
	var opts index.Options
	if o.maxMappedSnapshots > 0 {
		opts.Maps = index.NewSnapshotMaps(o.maxMappedSnapshots)
	}
	if !o.heapVectors {
		if err := os.MkdirAll(indexDir, 0o700); err != nil {
			return opts, fmt.Errorf("index directory: %w", err)
		}
		var err error
		if opts.Vectors, err = index.NewVectorFiles(indexDir); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// clusterEngine is the engine as the cluster member sees it: a change of
// placement evicts the owners this node no longer holds, and other nodes'
// changes are caught up in the owners' live indexes.
type clusterEngine struct{ *ingest.Engine }

func (e clusterEngine) PlacementChanged()          { e.Indexes().Evict() }
func (e clusterEngine) CatchUp(owner string) error { return e.Indexes().CatchUp(owner) }
func (e clusterEngine) CatchUpAll() error          { return e.Indexes().CatchUpAll() }
