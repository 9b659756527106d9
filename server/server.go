// Package server is docsift's HTTP API: echo routes, bearer-key auth,
// request validation, and the mapping of every failure to a JSON error with
// a fitting status. Handlers validate and translate; the work happens in
// ingest (uploads), search (queries and answers) and store (records).
package server

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docsift/docsift/cluster"
	"github.com/docsift/docsift/drive"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/metrics"
	"github.com/docsift/docsift/outbound"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/subpage"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/sync/semaphore"
)

// Defaults of Config.
const (
	DefaultMaxFileBytes = 64 << 20
	DefaultMaxTextBytes = 10 << 20
	DefaultSessionTTL   = time.Hour
	DefaultSubpageTTL   = 24 * time.Hour
	// DefaultSessionMaxPending bounds the files one upload session may
	// have waiting to be indexed: a person's batch of files fits, a script
	// holding the link cannot fill the queue.
	DefaultSessionMaxPending = 20
	// DefaultSubpageBudget bounds the disk one owner's live subpages take:
	// a thousand subpages of a typical PDF (around a megabyte each), or
	// seventy of a document whose pages share a 14 MB image; one owner
	// cannot fill the disk with slices of its documents.
	DefaultSubpageBudget = 1 << 30
	// DefaultMaxSubpagesPerProject bounds the live subpages of a project:
	// a hundred for each of a thousand customers, and the owner budgets
	// bound their bytes.
	DefaultMaxSubpagesPerProject = 100_000
	// DefaultMaxCustomersPerProject bounds a project's customers: more
	// than most services have tenants, while each customer with documents
	// is an index of its own that the server keeps loaded, with a memory
	// map (the kernel allows a process 65,530 by default); a script that
	// holds a project's key, or signs up to its service in a loop, cannot
	// make millions.
	DefaultMaxCustomersPerProject = 50_000
	// DefaultMaxDocumentsPerProject bounds a project's documents, all
	// statuses: at a few chunks each, more than one server searches
	// comfortably, so only a runaway script meets it.
	DefaultMaxDocumentsPerProject = 1_000_000
	// DefaultMaxStoredBytesPerProject is no bound: how the disk is
	// shared between projects is the operator's to say (a full disk
	// refuses uploads with a 507 and changes nothing).
	DefaultMaxStoredBytesPerProject = 0
	// DefaultMaxSessionsPerProject bounds a project's upload sessions
	// alive: a session is a link for one person for an hour, so ten
	// thousand at once is a busy site's hour; a script cannot fill the
	// store with them.
	DefaultMaxSessionsPerProject = 10_000
	// sessionBacklogRetrySeconds is the Retry-After of a session over that
	// bound: about the time a few small files take.
	sessionBacklogRetrySeconds = 5

	// maxJSONBytes bounds the body of every JSON endpoint but /upload/text.
	maxJSONBytes = 1 << 20
	// multipartOverhead is what the part headers and the data part may
	// add to a file upload's body beyond the file itself.
	multipartOverhead = 1 << 20
)

// Config is what the server needs to know beyond its parts.
type Config struct {
	BaseURL      string // how clients reach the server, for session and subpage URLs
	SpoolDir     string // where file uploads are written as they arrive (see store.Spool)
	MaxFileBytes int64
	MaxTextBytes int64
	SessionTTL   time.Duration
	SubpageTTL   time.Duration
	Version      string

	SubpageBudget         int64 // bytes one owner's live subpages may take
	MaxSubpagesPerProject int   // live subpages one project may keep
	// SlicePDF slices a subpage's pages out of its PDF; nil: pdf.Slice
	// (see subpage.Config.Slice).
	SlicePDF func(data []byte, first, last int) ([]byte, error)

	// Quotas of one project (see quotas.go); 0: none. Unlike the
	// limits above, a zero value does not take a Default: it is off.
	MaxCustomersPerProject   int   // customers
	MaxDocumentsPerProject   int   // documents of the project and its customers, any status
	MaxStoredBytesPerProject int64 // bytes of those documents' originals
	MaxSessionsPerProject    int   // upload sessions alive

	RateLimit         float64 // API requests per second per project; 0: unlimited
	SessionRateLimit  float64 // upload-session requests per second per session; 0: unlimited
	SessionMaxPending int     // files one upload session may have waiting to be indexed

	Conns   ConnLimits       // connection limits and timeouts
	Metrics *metrics.Metrics // nil: none kept

	// Drive imports from Google Drive on session pages; nil: off. Its
	// redirect URL must be DriveRedirectURL(BaseURL).
	Drive *drive.Client

	// Cluster is this node of a cluster (see cluster.go); nil: a single
	// node.
	Cluster *cluster.Node
	// RateBuckets, when set, keeps the rate limits' buckets where all the
	// nodes of a cluster share them; nil: in this process.
	RateBuckets SharedBuckets

	// WebhookGuard checks the addresses of the webhook endpoints projects
	// register, as the sender does at each delivery; nil: outbound's
	// default, which refuses the operator's network.
	WebhookGuard *outbound.Guard
	// ShowWebhookReplies shows the start of a receiver's failed answer in
	// a delivery's last_error (see webhook.ShownError); off: its status.
	ShowWebhookReplies bool
}

func (c Config) withDefaults() Config {
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = DefaultMaxFileBytes
	}
	if c.MaxTextBytes <= 0 {
		c.MaxTextBytes = DefaultMaxTextBytes
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SubpageTTL <= 0 {
		c.SubpageTTL = DefaultSubpageTTL
	}
	if c.SubpageBudget <= 0 {
		c.SubpageBudget = DefaultSubpageBudget
	}
	if c.MaxSubpagesPerProject <= 0 {
		c.MaxSubpagesPerProject = DefaultMaxSubpagesPerProject
	}
	if c.SessionMaxPending <= 0 {
		c.SessionMaxPending = DefaultSessionMaxPending
	}
	if c.SpoolDir == "" {
		c.SpoolDir = os.TempDir()
	}
	c.Conns = c.Conns.withDefaults()
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	return c
}

// Store is what the API keeps its records in: every part of a
// store.Backend but the owners' models and the webhook outbox, which
// ingest and the webhook sender work on.
type Store interface {
	store.ProjectStore
	store.CustomerStore
	store.SessionStore
	store.QuotaStore
	store.DocumentStore
	store.JobStore
	store.ChunkStore
	store.SubpageStore
	store.WebhookStore
	Now() time.Time
}

// Server is the HTTP API.
type Server struct {
	cfg    Config
	store  Store
	engine *ingest.Engine
	search *search.Service
	log    *slog.Logger
	echo   *echo.Echo

	projectLimit, sessionLimit *rateLimiter

	// subpages makes subpages (POST /subpage).
	subpages *subpage.Service

	// bodies is the memory request bodies may take at once (bodies.go).
	bodies *semaphore.Weighted

	// sessionUploads counts the uploads under way through each upload
	// session, by session id (see reserveSessionUpload).
	sessionUploads map[string]int
	sessionsMu     sync.Mutex
}

// New builds the API over its parts.
func New(cfg Config, st Store, engine *ingest.Engine, search *search.Service, log *slog.Logger) *Server {
	s := &Server{cfg: cfg.withDefaults(), store: st, engine: engine, search: search, log: log,
		sessionUploads: map[string]int{}, bodies: semaphore.NewWeighted(bodyBudget)}
	s.subpages = subpage.New(st, subpage.Config{
		TTL: s.cfg.SubpageTTL, OwnerBytes: s.cfg.SubpageBudget, MaxPerProject: s.cfg.MaxSubpagesPerProject,
		Slice: s.cfg.SlicePDF,
	})
	s.projectLimit = newRateLimiter(s.cfg.RateLimit, "project", s.cfg.RateBuckets)
	s.sessionLimit = newRateLimiter(s.cfg.SessionRateLimit, "upload session", s.cfg.RateBuckets)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(requestIDs)
	e.Use(s.logRequests)
	e.Use(s.paceBodies)
	e.Use(s.budgetBodies)
	e.Use(checkQueryString)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error("panic in handler", "request_id", requestID(c), "route", c.Path(), "err", err, "stack", string(stack))
			return err
		},
	}))

	e.GET("/healthz", s.healthz)
	e.GET("/openapi.json", s.openAPI)

	// The key is checked per route, not on a group: a group's middleware
	// would answer 401 instead of 404 for paths that do not exist.
	api := func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
		e.Add(method, path, h, append([]echo.MiddlewareFunc{s.requireKey, knownParams}, m...)...)
	}
	api(http.MethodPost, "/customer/create", s.createCustomer)
	api(http.MethodGet, "/customers", s.listCustomers)
	api(http.MethodPost, "/session/multi-tenant", s.createMultiTenantSession)
	api(http.MethodPost, "/session/single-tenant", s.createSingleTenantSession)
	api(http.MethodPost, "/upload/text", s.uploadText)
	api(http.MethodPost, "/upload/file", s.uploadFile)
	api(http.MethodPost, "/query/customer", s.queryCustomer, s.keepBody)
	api(http.MethodPost, "/query/project", s.queryProject, s.keepBody)
	api(http.MethodGet, "/jobs/:job_id", s.getJob)
	api(http.MethodGet, "/documents", s.listDocuments)
	api(http.MethodGet, "/documents/:document_id", s.getDocument)
	api(http.MethodDelete, "/documents/:document_id", s.deleteDocument)
	api(http.MethodPost, "/subpage", s.createSubpage)
	api(http.MethodPost, "/search/internet", s.searchInternet)
	api(http.MethodPost, "/webhooks", s.createWebhook)
	api(http.MethodGet, "/webhooks", s.listWebhooks)
	api(http.MethodDelete, "/webhooks/:webhook_id", s.deleteWebhook)
	api(http.MethodGet, "/webhooks/:webhook_id/deliveries", s.listDeliveries)
	e.GET("/subpages/:file", s.serveSubpage)
	s.routesUI(e)
	s.echo = e
	return s
}

// Handler is the API as an http.Handler.
func (s *Server) Handler() http.Handler { return routable(s.echo) }

// routable routes a request as its sender meant it, where echo would not:
// HEAD as the GET of its path (health and link checkers ask HEAD; net/http,
// which holds the original request, leaves the body out); a path escaped
// more than it had to be (/documents/doc%5Fx) by what it decodes to (ids
// hold no slash, so nothing is lost); and a session link copied with a
// slash after it as the link. The handler sees a copy of the request.
func routable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		session := strings.HasPrefix(p, "/s/") && len(p) > len("/s/") && strings.HasSuffix(p, "/")
		if r.Method == http.MethodHead || r.URL.RawPath != "" || session {
			r = r.WithContext(r.Context())
			u := *r.URL
			u.RawPath = ""
			if session {
				u.Path = strings.TrimSuffix(p, "/")
			}
			r.URL = &u
			if r.Method == http.MethodHead {
				r.Method = http.MethodGet
			}
		}
		h.ServeHTTP(w, r)
	})
}

// checkQueryString refuses a query string that does not decode. Go's parser
// drops a parameter it cannot decode ("find=50%" or "limit=5%"), and the
// request would run without the filter or the limit its caller wrote.
func checkQueryString(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := c.Request().URL.RawQuery
		if _, err := url.ParseQuery(raw); err != nil {
			for _, pair := range strings.Split(raw, "&") {
				if strings.Contains(pair, ";") {
					return badRequest("the query string holds %s: parameters are separated by &, not ;", clip.Quote(pair))
				}
				if _, err := url.QueryUnescape(pair); err != nil {
					return badRequest("the query string holds %s, which is not valid percent-encoding (a percent sign is written %%25)", clip.Quote(pair))
				}
			}
			return badRequest("the query string is not valid")
		}
		return next(c)
	}
}

// queryParams are the query parameters each API route takes, by route
// pattern; the others take none. A parameter a route does not take is
// refused, as an unknown field of a body is: a misspelt one (limt=5)
// would otherwise be ignored without a word.
var queryParams = map[string][]string{
	"/documents":                       {"owner_id", "limit", "cursor", "external_id"},
	"/customers":                       {"limit", "cursor", "find"},
	"/webhooks/:webhook_id/deliveries": {"limit"},
}

// knownParams refuses the query parameters the route does not take.
func knownParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		takes := queryParams[c.Path()]
		names := slices.Sorted(maps.Keys(c.QueryParams()))
		for _, name := range names {
			if slices.Contains(takes, name) {
				continue
			}
			route := c.Request().Method + " " + routeForPeople(c.Path())
			if len(takes) == 0 {
				return badRequest("unknown query parameter %s: %s takes none", clip.Quote(name), route)
			}
			return badRequest("unknown query parameter %s: %s takes %s", clip.Quote(name), route, strings.Join(takes, ", "))
		}
		return next(c)
	}
}

// routeForPeople writes a route pattern as the API's documents do:
// /webhooks/{webhook_id}, not /webhooks/:webhook_id.
func routeForPeople(pattern string) string {
	parts := strings.Split(pattern, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// Echo exposes the router, for tests that walk its routes.
func (s *Server) Echo() *echo.Echo { return s.echo }

// logRequests writes one line per request. It logs the route pattern, not
// the path: session paths carry their token, which is a credential.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "(no route)"
		}
		took := time.Since(start)
		s.cfg.Metrics.Request(route, metricMethod(c.Request().Method), strconv.Itoa(c.Response().Status), took)
		s.log.Info("request",
			"request_id", requestID(c),
			"method", clip.String(c.Request().Method), // any word a client sends
			"route", route,
			"status", c.Response().Status,
			"bytes", c.Response().Size,
			"ms", float64(took.Microseconds())/1000,
		)
		return nil
	}
}

// metricMethod bounds the method label: a client can send any word as a
// method, and each would be a new series.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// maxRequestIDBytes bounds an X-Request-ID a request comes with: room for
// a UUID, a proxy's or a tracer's id, and no more.
const maxRequestIDBytes = 64

// requestIDs gives each request its id, answered in X-Request-ID and
// written in each log line about it. The id a request comes with (from a
// proxy, or another node passing a query on) is kept when it is a short
// token of letters, digits, '.', '_' and '-'; any other (a megabyte, a
// line that reads as another log entry) is a client's to choose, and is
// replaced by a new one.
func requestIDs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !isRequestID(id) {
			id = rand.Text()
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

func isRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDBytes {
		return false
	}
	for _, b := range []byte(id) {
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return false
		}
	}
	return true
}

func (s *Server) healthz(c echo.Context) error {
	body := map[string]any{"status": "ok", "version": s.cfg.Version}
	if n := s.cfg.Cluster; n != nil {
		// What this node sees of its cluster, for operators and load
		// balancers: nodes that disagree here are still converging.
		body["node_id"], body["live_nodes"] = n.ID(), len(n.Live())
		if since, err := n.Unreachable(); err != nil {
			// Every answer that needs a record is a 503 meanwhile.
			body["status"] = "database unreachable"
			body["error"] = fmt.Sprintf("the node's heartbeats have failed for %s: %v", time.Since(since).Round(time.Second), err)
			return c.JSON(http.StatusServiceUnavailable, body)
		}
	}
	return c.JSON(http.StatusOK, body)
}
