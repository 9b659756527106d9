package cli

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/webhook"
	"github.com/docsift/docsift/websearch"
	"github.com/spf13/pflag"
)

// serveOptions are serve's flags, each also read from DOCSIFT_<FLAG>.
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

// register defines serve's flags on f; root reads each also from
// DOCSIFT_<FLAG>.
func (o *serveOptions) register(f *pflag.FlagSet) {
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
	f.Var(&o.subpageBudget, "subpage-budget", "disk the live subpages of one owner (a project or a customer) may take: a size such as 1GiB; a new subpage past it is answered 429 until older subpages expire")
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
}

// check refuses flag values that mean nothing, which would otherwise take
// a default or an absurd value without a word: a size, a time or a limit
// of zero or less, unless the flag says what zero means; and URLs and
// addresses that are not ones. It fills in --base-url's default.
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
	if _, err := o.webhooks.guard(); err != nil {
		return err
	}
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
