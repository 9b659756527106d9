package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/textproto"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/drivetest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/outbound"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// Limits of the test server: small, so that over-limit bodies stay cheap.
const (
	testMaxFileBytes = 4 << 10
	testMaxTextBytes = 2 << 10

	// jobDeadline bounds how long a test waits for a job to finish.
	jobDeadline = 30 * time.Second
)

// tenant is one project as a test sees it: its id, a working key and its
// customers.
type tenant struct {
	name      string
	projectID string
	key       string
	customers []string
}

// env is a running docsift: a real bbolt store in a temp dir, a started
// engine and the API behind a real HTTP listener.
type env struct {
	dir    string
	store  *bolt.Store
	engine *ingest.Engine
	srv    *httptest.Server
	base   string
	clock  *testClock
	logs   *syncBuffer
	a, b   tenant
}

type envOptions struct {
	cfg      server.Config
	workers  int
	embedder llm.Embedder
	answerer llm.Answerer
	web      search.WebSearcher
	drive    *drivetest.Server // when set, Drive import against this stand-in
	dir      string            // data dir; default: a new temp dir
	// defaultLimits leaves MaxFileBytes and MaxTextBytes at zero so the
	// server applies its own defaults.
	defaultLimits bool
}

// testClock is real time plus an offset the test can move forward. The
// store reads it from the engine's goroutines, so it is guarded.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// syncBuffer collects the server's logs; the handlers and workers write to
// it concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newEnv starts a server with projects A (two customers) and B (one
// customer), each with a key. Everything is torn down when the test ends.
func newEnv(t *testing.T, opts ...func(*envOptions)) *env {
	t.Helper()
	o := envOptions{workers: 2, embedder: llm.NewBuiltin(), answerer: llm.NewExtractive()}
	for _, f := range opts {
		f(&o)
	}
	if o.cfg.WebhookGuard == nil {
		o.cfg.WebhookGuard = testWebhookGuard
	}
	if !o.defaultLimits {
		if o.cfg.MaxFileBytes == 0 {
			o.cfg.MaxFileBytes = testMaxFileBytes
		}
		if o.cfg.MaxTextBytes == 0 {
			o.cfg.MaxTextBytes = testMaxTextBytes
		}
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	// The clock is set before any goroutine reads it.
	clock := &testClock{}
	st.SetClock(clock.Now)

	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := &env{dir: dir, store: st, clock: clock, logs: logs}
	e.engine, e.srv = startAPI(t, dir, st, o.cfg, o.embedder, o.answerer, o.web, o.workers, log, withDriveClient(t, o.drive, log))
	e.base = e.srv.URL
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})

	e.a = e.newTenant(t, "A", 2)
	e.b = e.newTenant(t, "B", 1)
	return e
}

// startAPI starts an engine over st and the API in front of it on a real
// listener whose URL is the server's base URL, and stops both (and closes
// st) when the test ends. Each of configure may complete the config once
// the base URL is known (a Drive client needs it for its redirect URL).
func startAPI(t *testing.T, dir string, st *bolt.Store, cfg server.Config, em llm.Embedder, a llm.Answerer, web search.WebSearcher, workers int, log *slog.Logger, configure ...func(*server.Config)) (*ingest.Engine, *httptest.Server) {
	t.Helper()
	engine := ingest.New(st, em, filepath.Join(dir, "index"), ingest.Config{Workers: workers}, log)
	if err := engine.Start(); err != nil {
		st.Close()
		t.Fatalf("start engine: %v", err)
	}
	// The base URL must be known before server.New; the listener is
	// created unstarted to learn its address first.
	ts := httptest.NewUnstartedServer(nil)
	cfg.BaseURL = "http://" + ts.Listener.Addr().String()
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = filepath.Join(dir, "spool")
	}
	for _, f := range configure {
		f(&cfg)
	}
	ts.Config.Handler = server.New(cfg, st, engine, search.New(engine, st, a, web, log), log).Handler()
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := engine.Shutdown(ctx); err != nil {
			t.Errorf("engine shutdown: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return engine, ts
}

// testWebhookGuard is the servers' webhook guard in tests, unless one sets
// its own: the tests' receivers listen on 127.0.0.1, which the default
// guard refuses, and their other endpoints' names resolve (without DNS)
// to a public address.
var testWebhookGuard = &outbound.Guard{
	Allow:    []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	Resolver: names{"app.example": "93.184.215.14", "example.com": "93.184.215.14"},
}

// names is a resolver of a few names; others do not exist.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func withDataDir(dir string) func(*envOptions) { return func(o *envOptions) { o.dir = dir } }

func withWorkers(n int) func(*envOptions) { return func(o *envOptions) { o.workers = n } }

func withEmbedder(em llm.Embedder) func(*envOptions) {
	return func(o *envOptions) { o.embedder = em }
}

func withAnswerer(a llm.Answerer) func(*envOptions) {
	return func(o *envOptions) { o.answerer = a }
}

func withWeb(w search.WebSearcher) func(*envOptions) {
	return func(o *envOptions) { o.web = w }
}

func withRateLimits(perProject, perSession float64) func(*envOptions) {
	return func(o *envOptions) { o.cfg.RateLimit, o.cfg.SessionRateLimit = perProject, perSession }
}

func withMaxFileBytes(n int64) func(*envOptions) {
	return func(o *envOptions) { o.cfg.MaxFileBytes = n }
}

func withMaxTextBytes(n int64) func(*envOptions) {
	return func(o *envOptions) { o.cfg.MaxTextBytes = n }
}

func withDefaultLimits() func(*envOptions) { return func(o *envOptions) { o.defaultLimits = true } }

// slicer is what a test sees of the slicing of subpages' PDFs: the server
// slices through it, with pdf.Slice, and through watch once the test has
// set it (after the env it may use is built).
type slicer struct {
	watch atomic.Pointer[func(slice func([]byte, int, int) ([]byte, error), data []byte, first, last int) ([]byte, error)]
}

// set has watch slice the subpages' PDFs, given pdf.Slice to call.
func (s *slicer) set(watch func(slice func([]byte, int, int) ([]byte, error), data []byte, first, last int) ([]byte, error)) {
	s.watch.Store(&watch)
}

func (s *slicer) slice(data []byte, first, last int) ([]byte, error) {
	if w := s.watch.Load(); w != nil {
		return (*w)(pdf.Slice, data, first, last)
	}
	return pdf.Slice(data, first, last)
}

// withSlicer has the server slice subpages' PDFs through s.
func withSlicer(s *slicer) func(*envOptions) {
	return func(o *envOptions) { o.cfg.SlicePDF = s.slice }
}

func (e *env) newTenant(t *testing.T, name string, customers int) tenant {
	t.Helper()
	p, key, err := e.store.CreateProject("project " + name)
	if err != nil {
		t.Fatalf("create project %s: %v", name, err)
	}
	tn := tenant{name: name, projectID: p.ID, key: key}
	for i := range customers {
		c, err := e.store.CreateCustomer(p.ID, fmt.Sprintf("customer %s%d", name, i+1), store.ProjectLimits{})
		if err != nil {
			t.Fatalf("create customer: %v", err)
		}
		tn.customers = append(tn.customers, c.ID)
	}
	return tn
}

// fingerprint is the digest of every record in the store.
func (e *env) fingerprint(t *testing.T) string {
	t.Helper()
	fp, err := e.store.Fingerprint()
	if err != nil {
		t.Fatalf("store fingerprint: %v", err)
	}
	return fp
}

// response is what came back from one request.
type response struct {
	req    string // "METHOD /path", for messages
	status int
	header http.Header
	body   []byte
}

func (r response) String() string {
	body := string(r.body)
	if len(body) > 600 {
		body = body[:600] + "…"
	}
	return fmt.Sprintf("%s → %d %s", r.req, r.status, body)
}

// do sends one request with key as bearer credential (none when empty).
func (e *env) do(t *testing.T, method, path, key, contentType string, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(method, e.base+path, body)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, path, err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{req: method + " " + path, status: resp.StatusCode, header: resp.Header, body: b}
}

// postJSON posts v as JSON; a string or []byte is sent as it is, so tests
// can send malformed bodies.
func (e *env) postJSON(t *testing.T, path, key string, v any) response {
	t.Helper()
	return e.do(t, http.MethodPost, path, key, "application/json", bytes.NewReader(jsonBytes(v)))
}

// jsonBytes marshals v, except that a string or []byte is taken as it is,
// so tests can send malformed JSON.
func jsonBytes(v any) []byte {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []byte:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %v: %v", v, err)) // a bug in the test itself
	}
	return b
}

func (e *env) get(t *testing.T, path, key string) response {
	t.Helper()
	return e.do(t, http.MethodGet, path, key, "", nil)
}

// part is one part of a multipart body.
type part struct {
	name     string
	filename string // empty: a plain field
	content  []byte
}

func filePart(filename string, content []byte) part {
	return part{name: "file", filename: filename, content: content}
}

func dataPart(v any) part {
	return part{name: "data", content: jsonBytes(v)}
}

// multipartBody encodes parts and returns the body and its Content-Type.
func multipartBody(t *testing.T, parts ...part) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := make(textproto.MIMEHeader)
		if p.filename != "" {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename))
			h.Set("Content-Type", "application/octet-stream")
		} else {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.name))
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		pw.Write(p.content)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("multipart: %v", err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

func (e *env) uploadFile(t *testing.T, key string, parts ...part) response {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	return e.do(t, http.MethodPost, "/upload/file", key, ct, bytes.NewReader(body))
}

// decodeAs decodes a 200 response's body, failing the test on anything else.
func decodeAs[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if r.status != http.StatusOK {
		t.Fatalf("want 200: %s", r)
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %T: %v: %s", v, err, r)
	}
	return v
}

// wantError asserts an error response: the status, a JSON Content-Type and
// a body {"error": "..."} with a non-empty message holding every one of
// substrings.
func wantError(t *testing.T, r response, status int, substrings ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("want status %d: %s", status, r)
		return
	}
	mt, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		t.Errorf("want Content-Type application/json, got %q: %s", r.header.Get("Content-Type"), r)
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Errorf("error body is not a JSON object (%v): %s", err, r)
		return
	}
	msg, ok := body["error"].(string)
	if !ok || strings.TrimSpace(msg) == "" {
		t.Errorf(`error body has no non-empty "error" string: %s`, r)
		return
	}
	for _, s := range substrings {
		if !strings.Contains(msg, s) {
			t.Errorf("error message %q does not mention %q (%s)", msg, s, r.req)
		}
	}
	if goSpeak.MatchString(msg) {
		t.Errorf("error message %q speaks of Go internals, not the API (%s)", msg, r.req)
	}
}

// goSpeak matches what a message written from Go's errors rather than the
// API's words would hold: Go type and field names, package prefixes.
var goSpeak = regexp.MustCompile(`Go (struct|value)|queryFields|\bfloat64\b|\bjson: |\bstrconv\.|\*[a-z]+\.[A-Z]|\b(server|store|ingest|search|llm|index|pdf): `)

// unchanged runs fn and fails when the store's records differ afterwards.
func (e *env) unchanged(t *testing.T, fn func()) {
	t.Helper()
	before := e.fingerprint(t)
	fn()
	if after := e.fingerprint(t); after != before {
		t.Errorf("the request changed the store (fingerprint %s… → %s…)", before[:12], after[:12])
	}
}

// apiJob is GET /jobs/{id}.
type apiJob struct {
	JobID      string `json:"job_id"`
	Status     string `json:"status"`
	OwnerID    string `json:"owner_id"`
	DocumentID string `json:"document_id"`
	Error      string `json:"error"`
	Chunks     int    `json:"chunks"`
}

type apiUpload struct {
	JobID      string `json:"job_id"`
	Status     string `json:"status"`
	DocumentID string `json:"document_id"`
}

type apiDocument struct {
	DocumentID string            `json:"document_id"`
	OwnerID    string            `json:"owner_id"`
	ProjectID  string            `json:"project_id"`
	Name       string            `json:"name"`
	Metadata   map[string]string `json:"metadata"`
	Format     string            `json:"format"`
	Status     string            `json:"status"`
	Chunks     int               `json:"chunks"`
	JobID      string            `json:"job_id"`
}

type apiChunk struct {
	ChunkID      string  `json:"chunk_id"`
	DocumentID   string  `json:"document_id"`
	DocumentName string  `json:"document_name"`
	Page         *int    `json:"page"`
	Text         string  `json:"text"`
	Score        float64 `json:"score"`
}

type apiQuery struct {
	Answer      string     `json:"answer"`
	AnswerModel string     `json:"answer_model"`
	Chunks      []apiChunk `json:"chunks"`
}

func (q apiQuery) documents() map[string]bool {
	docs := map[string]bool{}
	for _, c := range q.Chunks {
		docs[c.DocumentID] = true
	}
	return docs
}

// waitJob waits until the job is SUCCEEDED or FAILED, woken by the engine
// as jobs end, and returns it as GET /jobs/{id} shows it. It fails the test
// when the job does not end in time.
func (e *env) waitJob(t *testing.T, key, jobID string) apiJob {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobDeadline)
	defer cancel()
	if _, err := e.engine.WaitJob(ctx, jobID); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job %s: %v", jobID, err)
	}
	j := decodeAs[apiJob](t, e.get(t, "/jobs/"+jobID, key))
	if j.Status != store.StatusSucceeded && j.Status != store.StatusFailed {
		t.Fatalf("job %s is %s after waiting for it to end", jobID, j.Status)
	}
	return j
}

// uploadText uploads text for owner, waits for its job and requires it to
// succeed. It returns the document id.
func (e *env) uploadText(t *testing.T, key, owner, name, text string) string {
	t.Helper()
	up := decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", key, map[string]any{"owner_id": owner, "name": name, "text": text}))
	if j := e.waitJob(t, key, up.JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("indexing %q: job %s ended %s: %s", name, j.JobID, j.Status, j.Error)
	}
	return up.DocumentID
}

func (e *env) query(t *testing.T, key, path string, body map[string]any) apiQuery {
	t.Helper()
	return decodeAs[apiQuery](t, e.postJSON(t, path, key, body))
}

// seeded is an env with one indexed document per owner, each holding a
// word no other document has, and every job finished: a quiet store for
// the bad-input tests to compare fingerprints on.
type seeded struct {
	*env
	// the seed documents of A's project, A's two customers, B's project
	// and B's customer
	docA, docA1, docA2, docB, docB1 string
	jobB                            string
	wordOf                          map[string]string // owner id → its unique word
}

// Texts of the seed documents. Each owner's text holds its own unusual word
// so a query can tell whose chunks came back.
func seedText(word string) string {
	return fmt.Sprintf("The quarterly report of this owner mentions the codeword %s several times. "+
		"The codeword %s unlocks the archive room on the third floor. "+
		"Visitors sign the ledger before entering the archive.", word, word)
}

func newSeeded(t *testing.T, opts ...func(*envOptions)) *seeded {
	t.Helper()
	s := &seeded{env: newEnv(t, opts...), wordOf: map[string]string{}}
	a, b := s.a, s.b
	owners := []struct {
		key, owner, word string
		doc              *string
	}{
		{a.key, a.projectID, "amberfalcon", &s.docA},
		{a.key, a.customers[0], "bluegazelle", &s.docA1},
		{a.key, a.customers[1], "crimsonheron", &s.docA2},
		{b.key, b.projectID, "dustyjackal", &s.docB},
		{b.key, b.customers[0], "emeraldkoala", &s.docB1},
	}
	for _, o := range owners {
		*o.doc = s.uploadText(t, o.key, o.owner, "notes "+o.word, seedText(o.word))
		s.wordOf[o.owner] = o.word
	}
	d := decodeAs[apiDocument](t, s.get(t, "/documents/"+s.docB1, b.key))
	s.jobB = d.JobID
	return s
}

// badCase is one refused request. body is sent as JSON (a string as it is).
type badCase struct {
	name   string
	method string // default POST
	path   string
	key    string
	body   any
	status int
	want   []string // substrings of the error message
}

// runBad sends every case and checks the error response and that the store
// did not change.
func runBad(t *testing.T, e *env, cases []badCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.unchanged(t, func() {
				var r response
				switch c.method {
				case "", http.MethodPost:
					r = e.postJSON(t, c.path, c.key, c.body)
				default:
					r = e.do(t, c.method, c.path, c.key, "", nil)
				}
				wantError(t, r, c.status, c.want...)
			})
		})
	}
}

// revokedKey returns a key of tn's project that has been revoked.
func (e *env) revokedKey(t *testing.T, tn tenant) string {
	t.Helper()
	secret, k, err := e.store.CreateKey(tn.projectID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RevokeKey(k.ID); err != nil {
		t.Fatal(err)
	}
	return secret
}

// defaults fills in the path and key of cases that have none; key "-"
// means no key.
func (cs badCases) defaults(key, path string) []badCase {
	out := make([]badCase, len(cs))
	for i, c := range cs {
		if c.path == "" {
			c.path = path
		}
		switch c.key {
		case "":
			c.key = key
		case "-":
			c.key = ""
		}
		out[i] = c
	}
	return out
}

type badCases []badCase

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// gateEmbedder holds the first Embed call after arm until release is
// closed, so a test can look at a job while it is PROCESSING.
type gateEmbedder struct {
	llm.Embedder
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newGateEmbedder() *gateEmbedder {
	return &gateEmbedder{Embedder: llm.NewBuiltin(), entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if g.armed.CompareAndSwap(true, false) {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Embedder.Embed(ctx, texts)
}

func (g *gateEmbedder) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(jobDeadline):
		t.Fatal("no job reached the embedder")
	}
}

// storedFiles counts the originals kept for owner (small ones in the
// database, the others in DATA/files/OWNER/).
func (e *env) storedFiles(t *testing.T, owner string) int {
	t.Helper()
	n, err := e.store.StoredOriginals(owner)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (s *seeded) jobOf(t *testing.T, doc string) string {
	t.Helper()
	d, err := s.store.Document(doc)
	if err != nil {
		t.Fatalf("document %s: %v", doc, err)
	}
	return d.JobID
}
