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
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docsift/docsift/drive"
	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/metrics"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/webhook"
	"github.com/docsift/docsift/websearch"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/spf13/cobra"
)

const (
	defaultAddr = "127.0.0.1:8080"
	// shutdownGrace is how long requests and jobs get to finish on SIGTERM
	// before jobs are cancelled and requeued.
	shutdownGrace = 20 * time.Second
)

type serveOptions struct {
	addr, data, baseURL string
	storeURL, nodeURL   string
	workers             int
	maxFile, maxText    byteSize
	sessionTTL          time.Duration
	subpageTTL          time.Duration
	logFormat, logLevel string
	models              modelOptions
	maxAttempts         int
	retryMax            time.Duration
	extractTimeout      time.Duration
	maxPages            int
	maxPageText         byteSize
	maxDocumentText     byteSize
	ocrLanguages        string
	rateLimit           float64
	sessionRateLimit    float64
	searxngURL          string
	sessionMaxPending   int
	maxConns            int
	maxConnsPerClient   int
	writeStall          time.Duration
	subpageBudget       byteSize
	maxSubpages         int
	maxCustomers        int
	maxDocuments        int
	maxStoredBytes      byteSize
	maxSessions         int
	googleClientID      string
	googleClientSecret  string
	metricsAddr         string
	logFile             string
	webhookFirstRetry   time.Duration
	webhooks            webhookAddresses
	webhookShowReplies  bool
	queryEmbedTimeout   time.Duration
	maxSearches         int
	memoryLimit         string
	gcHeadroom          string
	heapVectors         bool
	maxMappedSnapshots  int
}

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
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", defaultAddr, "address to listen on")
	f.StringVar(&o.data, "data", defaultDataDir, "data directory")
	f.StringVar(&o.baseURL, "base-url", "", "URL clients reach the server at, for session and subpage URLs: the root of a host name or port, not a path (default http://ADDR)")
	f.StringVar(&o.storeURL, "store", "", "where records live: empty for the bbolt file in the data directory, or a postgres:// URL for a cluster of nodes sharing one PostgreSQL (see docs/cluster.md); each node still needs a data directory of its own for its index snapshots")
	f.StringVar(&o.nodeURL, "node-url", "", "in a cluster, the URL the other nodes reach this one at (default http://ADDR, with this machine's host name when ADDR listens on every interface)")
	f.IntVar(&o.workers, "workers", 0, "indexing workers, each running one job at a time (default: number of CPUs); as many again take only the jobs of projects with none running, so that one project's long documents do not hold up another's; with the built-in embedder, small text documents (up to 64 KiB) also run beside them, up to 32 per worker, so that their commits are grouped")
	o.maxFile, o.maxText = server.DefaultMaxFileBytes, server.DefaultMaxTextBytes
	f.Var(&o.maxFile, "max-file-size", "largest file upload: a size such as 64MiB, or a number of bytes")
	f.Var(&o.maxText, "max-text-size", "largest text upload: a size such as 10MiB, or a number of bytes")
	f.DurationVar(&o.sessionTTL, "session-ttl", server.DefaultSessionTTL, "how long an upload session URL stays valid")
	f.DurationVar(&o.subpageTTL, "subpage-ttl", server.DefaultSubpageTTL, "how long a subpage URL stays valid; asked for again with less than half of it left, it is renewed")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "least severe log lines written: debug, info, warn or error; info writes a line a request and one a job when it ends, debug also when each job is queued and started")
	f.StringVar(&o.logFile, "log-file", "", "write the log to this file instead of standard error; SIGHUP reopens it (for log rotation)")
	f.IntVar(&o.maxAttempts, "max-attempts", ingest.DefaultMaxAttempts, "runs of an indexing job that fails for a passing reason (Ollama down) before it is FAILED")
	f.DurationVar(&o.retryMax, "retry-max-delay", ingest.DefaultRetryMax, "longest wait between those runs (the wait doubles from 2s)")
	f.DurationVar(&o.extractTimeout, "extract-timeout", ingest.DefaultExtractTimeout, "longest text extraction of one document before its job fails")
	f.IntVar(&o.maxPages, "max-document-pages", pdf.DefaultMaxPages, "most pages one document may have; a document with more fails, naming the limit")
	o.maxPageText, o.maxDocumentText = pdf.DefaultMaxPageText, pdf.DefaultMaxText
	f.Var(&o.maxPageText, "max-page-text", "most text one page may hold (a size such as 1MiB); past it the document fails: such a page is drawn glyph by glyph, a way to make a small file unfold into gigabytes")
	f.Var(&o.maxDocumentText, "max-document-text", "most text one document may hold (a size such as 32MiB); the server holds some five times a document's text while it indexes it")
	f.DurationVar(&o.queryEmbedTimeout, "query-embed-timeout", search.DefaultQueryEmbedTimeout, "longest wait for a query's embedding (a model server busy embedding documents answers late); past it the query is answered from the lexical index, with a warning")
	f.IntVar(&o.maxSearches, "max-searches", 0, "index searches run at once at most; more wait their turn, in order (default: twice the number of CPUs). Each holds a few bytes a chunk of its owner while it runs: more at once use more memory and finish none sooner")
	f.StringVar(&o.ocrLanguages, "ocr-languages", pdf.DefaultOCRLanguages, "languages OCR reads scans and images in: Tesseract codes joined by +, e.g. eng+deu; each needs its Debian package (tesseract-ocr-deu)")
	f.Float64Var(&o.rateLimit, "rate-limit", server.DefaultRateLimit, "API requests per second per project (0: unlimited); over it: 429 with Retry-After")
	f.Float64Var(&o.sessionRateLimit, "session-rate-limit", server.DefaultSessionRateLimit, "requests per second per upload session URL (0: unlimited)")
	f.StringVar(&o.searxngURL, "searxng-url", "", "SearxNG-compatible search endpoint for POST /search/internet (unset: internet search is off)")
	f.IntVar(&o.sessionMaxPending, "session-max-pending", server.DefaultSessionMaxPending, "files one upload session may have waiting to be indexed; more: 429 with Retry-After")
	f.IntVar(&o.maxConns, "max-connections", server.DefaultMaxConns, "open connections at most; more are answered 503 and closed")
	f.IntVar(&o.maxConnsPerClient, "max-connections-per-client", server.DefaultMaxConnsPerClient, "open connections from one client at most: an IPv4 address, or an IPv6 /64 network (what one host is commonly given)")
	f.DurationVar(&o.writeStall, "write-stall", server.DefaultWriteStall, "longest a write of an answer may wait on a client that does not read it before the connection is cut (an answer may take longer in all, as long as its client keeps reading)")
	o.subpageBudget = server.DefaultSubpageBudget
	f.Var(&o.subpageBudget, "subpage-budget", "disk the live subpages of one owner (a project or a customer) may take: a size such as 1GiB; a cut past it is answered 429 until older subpages expire")
	f.IntVar(&o.maxSubpages, "max-subpages-per-project", server.DefaultMaxSubpagesPerProject, "live subpages one project may keep; more are answered 429 until older ones expire")
	f.IntVar(&o.maxCustomers, "max-customers-per-project", server.DefaultMaxCustomersPerProject, "customers one project may have (0: no quota); more are answered 403. Each customer with documents is an index the server keeps loaded, with a memory map of its own")
	f.IntVar(&o.maxDocuments, "max-documents-per-project", server.DefaultMaxDocumentsPerProject, "documents one project and its customers may keep, whatever their status (0: no quota); more are answered 403 until some are deleted")
	o.maxStoredBytes = server.DefaultMaxStoredBytesPerProject
	f.Var(&o.maxStoredBytes, "max-stored-bytes-per-project", "bytes the originals of one project's documents (its own and its customers') may take, each document's size counted even when its content is stored once for several: a size such as 10GiB (0: no quota, the default: how the disk is shared is yours to say); past it uploads are answered 403 until documents are deleted")
	f.IntVar(&o.maxSessions, "max-sessions-per-project", server.DefaultMaxSessionsPerProject, "upload sessions one project may have alive at once (0: no quota); more are answered 429 until one expires or is closed")
	f.StringVar(&o.googleClientID, "google-client-id", "", "OAuth client id (type Web application) for Google Drive import on upload pages; its redirect URI is BASE_URL"+server.DriveCallbackPath+" (unset: Drive import is off)")
	f.StringVar(&o.googleClientSecret, "google-client-secret", "", "that OAuth client's secret (prefer DOCSIFT_GOOGLE_CLIENT_SECRET: a flag shows in the process list)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "address to serve Prometheus metrics on, at /metrics (unset: off); keep it private, e.g. 127.0.0.1:9464")
	f.DurationVar(&o.webhookFirstRetry, "webhook-first-retry", webhook.DefaultFirstRetry, "wait before a failed webhook delivery is tried again; it doubles up to an hour, for three days")
	o.webhooks.register(f)
	f.BoolVar(&o.webhookShowReplies, "webhook-show-replies", false, "show projects the start (200 bytes, sanitised) of what their webhook receivers answered to a failed delivery, in GET /webhooks/{id}/deliveries; off, the answer's status alone (a receiver inside your network, allowed for one project, may answer with what no project should read)")
	f.StringVar(&o.memoryLimit, "memory-limit", "auto", "soft limit of the Go runtime's memory: auto (three quarters of the memory the process may use, its cgroup's limit or else the machine's; GOMEMLIMIT in the environment wins), off, or a size such as 2GiB or 1500MiB. Without one the heap grows to about twice its live data; near it the garbage collector runs more often, trading CPU for that headroom")
	f.StringVar(&o.gcHeadroom, "gc-headroom", "auto", "heap growth the garbage collector allows at least before it runs: auto (256MiB, or an eighth of the memory limit when that is less; GOGC in the environment wins), off, or a size. The collector otherwise runs when the heap has doubled, several times a second for a small heap under ingest: more memory held for less CPU while busy, given back once collections are 30s apart")
	f.IntVar(&o.maxMappedSnapshots, "max-mapped-snapshots", 0, "owners' index snapshots read in place through a memory map at most; the others are read into the heap (default: half of what the kernel's vm.max_map_count leaves, past which a process dies)")
	f.BoolVar(&o.heapVectors, "heap-vectors", false, "keep the indexes' float vectors in memory instead of in memory-mapped scratch files under DATA/index (faster re-scoring when memory is plentiful, 1.5 KB more anonymous memory per chunk at 384 dimensions)")
	o.models.register(f, true, llm.ModeAuto)
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

// check refuses flag values that mean nothing, which would otherwise take
// a default or an absurd value without a word: a size, a time or a limit
// of zero or less, unless the flag says what zero means.
func (o *serveOptions) check() error {
	for _, c := range []struct {
		flag string
		ok   bool
		want string
	}{
		{"--max-file-size", o.maxFile > 0, "a size above 0"},
		{"--max-text-size", o.maxText > 0, "a size above 0"},
		{"--workers", o.workers >= 0, "0 (as many as CPUs) or more"},
		{"--session-ttl", o.sessionTTL > 0, "a duration above 0, such as 1h"},
		{"--subpage-ttl", o.subpageTTL > 0, "a duration above 0, such as 24h"},
		{"--max-attempts", o.maxAttempts > 0, "1 or more"},
		{"--retry-max-delay", o.retryMax > 0, "a duration above 0, such as 5m"},
		{"--extract-timeout", o.extractTimeout > 0, "a duration above 0, such as 30m"},
		{"--max-document-pages", o.maxPages > 0, "1 or more"},
		{"--max-mapped-snapshots", o.maxMappedSnapshots >= 0, "0 (half of what vm.max_map_count leaves) or more"},
		{"--max-page-text", o.maxPageText > 0 && o.maxPageText <= 1<<30, "a size above 0 and at most 1GiB"},
		{"--max-document-text", o.maxDocumentText > 0, "a size above 0"},
		{"--query-embed-timeout", o.queryEmbedTimeout > 0, "a duration above 0, such as 2s"},
		{"--max-searches", o.maxSearches >= 0, "0 (twice the CPUs) or more"},
		{"--rate-limit", o.rateLimit >= 0 && !math.IsInf(o.rateLimit, 0), "0 (unlimited) or a number of requests a second"},
		{"--session-rate-limit", o.sessionRateLimit >= 0 && !math.IsInf(o.sessionRateLimit, 0), "0 (unlimited) or a number of requests a second"},
		{"--session-max-pending", o.sessionMaxPending > 0, "1 or more"},
		{"--max-connections", o.maxConns > 0, "1 or more"},
		{"--max-connections-per-client", o.maxConnsPerClient > 0, "1 or more"},
		{"--write-stall", o.writeStall > 0, "a duration above 0, such as 30s"},
		{"--subpage-budget", o.subpageBudget > 0, "a size above 0, such as 1GiB"},
		{"--max-subpages-per-project", o.maxSubpages > 0, "1 or more"},
		{"--max-customers-per-project", o.maxCustomers >= 0, "0 (no quota) or more"},
		{"--max-documents-per-project", o.maxDocuments >= 0, "0 (no quota) or more"},
		{"--max-sessions-per-project", o.maxSessions >= 0, "0 (no quota) or more"},
		{"--webhook-first-retry", o.webhookFirstRetry > 0, "a duration above 0, such as 10s"},
	} {
		if !c.ok { // NaN fails every comparison, so it lands here too
			return fmt.Errorf("%s must be %s", c.flag, c.want)
		}
	}
	_, err := o.webhooks.guard()
	return err
}

// byteSize is a size flag: a size such as 64MiB (see parseByteSize) or a
// number of bytes.
type byteSize int64

func (b *byteSize) String() string { return sizeLabel(int64(*b)) }
func (b *byteSize) Type() string   { return "size" }

func (b *byteSize) Set(v string) error {
	n, err := parseByteSize(v)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
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
	if o.baseURL == "" {
		o.baseURL = defaultBaseURL(o.addr)
	}
	if u, err := url.Parse(o.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--base-url must be an absolute http or https URL, like https://docs.example.com, not %q", redact.URL(o.baseURL))
	}
	o.baseURL = strings.TrimRight(o.baseURL, "/")
	// The pages and the console link to their assets and endpoints from
	// the root of the host: behind a path (a proxy's /docsift/) they would
	// load without them.
	if u, _ := url.Parse(o.baseURL); u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--base-url must be the root of a host (like https://docs.example.com), not %q: docsift is served at the root of its host name or port, not under a path", redact.URL(o.baseURL))
	}
	if o.searxngURL != "" {
		if _, err := websearch.NewSearx(o.searxngURL, nil); err != nil {
			return fmt.Errorf("--searxng-url must be an absolute http or https URL, like http://127.0.0.1:8888, not %q", redact.URL(o.searxngURL))
		}
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr must be a host and port, like 127.0.0.1:9464, not %q", o.metricsAddr)
		}
	}
	memLimit, err := resolveMemoryLimit(o.memoryLimit, os.LookupEnv, admin.AvailableMemory)
	if err != nil {
		return fmt.Errorf("--memory-limit: %w", err)
	}
	if !memLimit.keep {
		debug.SetMemoryLimit(memLimit.bytes)
	}
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		log.Info("Go memory limit", "limit", sizeLabel(limit), "from", memLimit.from)
	} else {
		log.Info("Go memory limit is off", "from", memLimit.from)
	}
	headroom, err := resolveGCHeadroom(o.gcHeadroom, os.LookupEnv, debug.SetMemoryLimit(-1))
	if err != nil {
		return fmt.Errorf("--gc-headroom: %w", err)
	}
	defer keepGCHeadroom(headroom.bytes, nil)()
	if headroom.bytes > 0 {
		log.Info("garbage collector headroom", "headroom", sizeLabel(headroom.bytes), "from", headroom.from)
	} else {
		log.Info("garbage collector headroom is off", "from", headroom.from)
	}
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
	var member *clusterMember
	if pg != nil {
		if o.nodeURL == "" {
			o.nodeURL = defaultNodeURL(o.addr)
		}
		if member, err = joinCluster(pg, o.nodeURL, log); err != nil {
			return err
		}
		// Deferred before the engine's shutdown, so it runs after it:
		// the node leaves once its workers have stopped.
		defer member.leave(context.Background())
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
	if _, isOllama := embedder.(*llm.OllamaEmbedder); !isOllama && o.models.embedder != llm.ModeBuiltin {
		// Ollama was not usable at start: owners whose vectors came from
		// it keep it, and their jobs wait for it to come back.
		if oe, err := o.models.standbyEmbedder(st, log); err == nil {
			cfg.Embedders = append(cfg.Embedders, oe)
		}
	}
	indexDir := filepath.Join(o.data, "index")
	if o.maxMappedSnapshots > 0 {
		index.SetMapBudget(o.maxMappedSnapshots)
	}
	if !o.heapVectors {
		if err := os.MkdirAll(indexDir, 0o700); err != nil {
			return fmt.Errorf("index directory: %w", err)
		}
		if err := index.SetVectorDir(indexDir); err != nil {
			return err
		}
	}
	if member != nil {
		cfg.Holds = member.node.Holds
	}
	engine := ingest.New(st, embedder, indexDir, cfg, log)
	if err := engine.Start(); err != nil {
		return err
	}
	if member != nil {
		clusterCtx, stopCluster := context.WithCancel(ctx)
		wait := member.run(clusterCtx, engine)
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
	scfg := server.Config{
		BaseURL: o.baseURL, SpoolDir: spool, MaxFileBytes: int64(o.maxFile), MaxTextBytes: int64(o.maxText),
		SessionTTL: o.sessionTTL, SubpageTTL: o.subpageTTL, Version: version,
		RateLimit: o.rateLimit, SessionRateLimit: o.sessionRateLimit, SessionMaxPending: o.sessionMaxPending,
		SubpageBudget: int64(o.subpageBudget), MaxSubpagesPerProject: o.maxSubpages,
		MaxCustomersPerProject: o.maxCustomers, MaxDocumentsPerProject: o.maxDocuments,
		MaxStoredBytesPerProject: int64(o.maxStoredBytes), MaxSessionsPerProject: o.maxSessions,
		Conns:        server.ConnLimits{MaxConns: o.maxConns, MaxConnsPerClient: o.maxConnsPerClient, WriteStall: o.writeStall},
		WebhookGuard: guard, ShowWebhookReplies: o.webhookShowReplies,
	}
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
		scfg.Cluster, scfg.RateBuckets = member.node, pg
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

func defaultBaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// firstStart creates the "default" project on an empty data dir and prints
// its key once, in a line that puts it in a shell variable: the commands
// after it use the variable, so the key appears once in a service's log.
func firstStart(st store.ProjectStore, baseURL string, w io.Writer) error {
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

// parseByteSize reads a size such as "2GiB", "1500MiB", "512KiB" or a
// plain count of bytes; "0" or "" is 0.
func parseByteSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	orig, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || !(n >= 0) || n*float64(mult) > float64(1<<62) { // !(n >= 0): NaN too
		return 0, fmt.Errorf("%q is not a size such as 2GiB, 1500MiB or a number of bytes", orig)
	}
	return int64(n * float64(mult)), nil
}
