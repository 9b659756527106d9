package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/drivetest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// xssName is a file name that runs script if a page inserts it as HTML.
const xssName = `<img src=x onerror="window.__xss=1">.txt`

// uiEnv is a running server for the UI tests: a real store and engine, one
// project with a customer, and the project's key.
type uiEnv struct {
	base     string
	server   *httptest.Server
	store    *bolt.Store
	engine   *ingest.Engine
	project  *store.Project
	customer *store.Customer
	key      string

	mu  sync.Mutex
	now time.Time // the store's clock; zero: real time
}

type uiOptions struct {
	drive        *drivetest.Server // when set, Drive import against this stand-in
	maxFileBytes int64
	sessionRate  float64 // requests per second per session; 0: unlimited
	maxPending   int     // files a session may have waiting; 0: the default
	projectName  string
	customerName string
}

func newUIEnv(t *testing.T, opts ...func(*uiOptions)) *uiEnv {
	t.Helper()
	o := uiOptions{maxFileBytes: 1 << 20, projectName: "Acme Research", customerName: "Globex Legal"}
	for _, f := range opts {
		f(&o)
	}
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	st.SetThrowaway()
	e := &uiEnv{store: st}
	st.SetClock(e.clock)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var ts *httptest.Server
	e.engine, ts = startAPI(t, filepath.Join(dir, "data"), st, server.Config{MaxFileBytes: o.maxFileBytes, SessionRateLimit: o.sessionRate, SessionMaxPending: o.maxPending}, llm.NewBuiltin(), llm.NewExtractive(), nil, 1, log, withDriveClient(t, o.drive, log))
	e.base, e.server = ts.URL, ts

	p, key, err := st.CreateProject(o.projectName)
	if err != nil {
		t.Fatalf("create project: %v", err)
	}
	cus, err := st.CreateCustomer(p.ID, o.customerName, store.ProjectLimits{})
	if err != nil {
		t.Fatalf("create customer: %v", err)
	}
	e.project, e.customer, e.key = p, cus, key
	return e
}

func (e *uiEnv) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.now.IsZero() {
		return time.Now()
	}
	return e.now
}

// advance moves the store's clock d past real time.
func (e *uiEnv) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = time.Now().Add(d)
}

type uiResponse struct {
	status int
	header http.Header
	body   []byte
}

func (r uiResponse) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

func (e *uiEnv) do(t *testing.T, method, path, key, contentType string, body io.Reader) uiResponse {
	t.Helper()
	req, err := http.NewRequest(method, e.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return uiResponse{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *uiEnv) postJSON(t *testing.T, path string, v any) uiResponse {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return e.do(t, http.MethodPost, path, e.key, "application/json", bytes.NewReader(b))
}

func decodeUI[T any](t *testing.T, r uiResponse) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, r, err)
	}
	return v
}

type uiSession struct {
	URL       string `json:"url"`
	SessionID string `json:"session_id"`
	OwnerID   string `json:"owner_id"`
	token     string
}

// path is the session page's path on the server.
func (s uiSession) path() string { return "/s/" + s.token }

// newSession creates a session through the API: for the customer when
// customerID is set, else for the project.
func (e *uiEnv) newSession(t *testing.T, customerID string, services []string, success, cancel string) uiSession {
	t.Helper()
	body := map[string]any{"project_id": e.project.ID, "services": services, "success_url": success, "cancel_url": cancel}
	path := "/session/single-tenant"
	if customerID != "" {
		body["customer_id"] = customerID
		path = "/session/multi-tenant"
	}
	r := e.postJSON(t, path, body)
	if r.status != http.StatusOK {
		t.Fatalf("create session: %s", r)
	}
	s := decodeUI[uiSession](t, r)
	u, err := url.Parse(s.URL)
	if err != nil || !strings.HasPrefix(u.Path, "/s/") {
		t.Fatalf("session url %q is not {base}/s/{token}", s.URL)
	}
	s.token = strings.TrimPrefix(u.Path, "/s/")
	return s
}

// uploadMultipart posts parts (name → filename, content) to path.
func (e *uiEnv) uploadMultipart(t *testing.T, path, key string, parts ...[3]string) uiResponse {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		var pw io.Writer
		var err error
		if p[1] != "" {
			pw, err = w.CreateFormFile(p[0], p[1])
		} else {
			pw, err = w.CreateFormField(p[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(pw, p[2])
	}
	w.Close()
	return e.do(t, http.MethodPost, path, key, w.FormDataContentType(), &buf)
}

type uiJob struct {
	JobID      string `json:"job_id"`
	DocumentID string `json:"document_id"`
	Name       string `json:"name"`
	Status     string `json:"status"`
	Error      string `json:"error"`
}

func (e *uiEnv) sessionJobs(t *testing.T, s uiSession, jobIDs ...string) []uiJob {
	t.Helper()
	q := url.Values{"job_id": jobIDs}
	path := s.path() + "/jobs"
	if len(jobIDs) > 0 {
		path += "?" + q.Encode()
	}
	r := e.do(t, http.MethodGet, path, "", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s/jobs: %s", s.path(), r)
	}
	return decodeUI[struct {
		Jobs []uiJob `json:"jobs"`
	}](t, r).Jobs
}

// sessionUpload uploads one file through the session and returns its job.
func (e *uiEnv) sessionUpload(t *testing.T, s uiSession, name, content string) (jobID, documentID string) {
	t.Helper()
	r := e.uploadMultipart(t, s.path()+"/upload", "", [3]string{"file", name, content})
	if r.status != http.StatusOK {
		t.Fatalf("session upload of %q: %s", name, r)
	}
	up := decodeUI[struct {
		JobID      string `json:"job_id"`
		Status     string `json:"status"`
		DocumentID string `json:"document_id"`
	}](t, r)
	if up.Status != store.StatusPending || up.JobID == "" || up.DocumentID == "" {
		t.Fatalf("session upload answered %s", r)
	}
	return up.JobID, up.DocumentID
}

func wantUIError(t *testing.T, r uiResponse, status int, contains string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 1 {
		t.Fatalf("error body is not {\"error\": ...}: %s", r.body)
	}
	msg, _ := body["error"].(string)
	if msg == "" || !strings.Contains(msg, contains) {
		t.Fatalf("error %q does not mention %q", msg, contains)
	}
}

var uiSecurityHeaders = map[string]string{
	"Referrer-Policy":        "no-referrer",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-store",
}

func wantSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, v := range uiSecurityHeaders {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
	csp := h.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
		"connect-src 'self'", "form-action 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: Content-Security-Policy %q allows inline code", what, csp)
	}
}

func TestUISessionPage(t *testing.T) {
	e := newUIEnv(t)
	s := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/done?x=1&y=2", "https://app.example/cancel")
	r := e.do(t, http.MethodGet, s.path(), "", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET session page: %s", r)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q", ct)
	}
	wantSecurityHeaders(t, "session page", r.header)
	page := string(r.body)
	for _, want := range []string{
		"Acme Research", "Globex Legal", // who the upload is for
		"PDF", "EPUB", "Markdown", "1 MiB", // accepted types and the limit
		`id="dropzone"`, `type="file"`, "multiple",
		`href="https://app.example/done?x=1&amp;y=2"`, `href="https://app.example/cancel"`,
		`src="/ui/assets/upload.js?v=`, `href="/ui/assets/app.css?v=`,
		`data-upload-url="` + s.path() + `/upload"`, `data-jobs-url="` + s.path() + `/jobs"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, unwanted := range []string{"<style", "style=", "<script>", "onclick", "http://fonts", "https://cdn", "Google Drive"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("page holds %q", unwanted)
		}
	}
	// A link copied with a slash after it leads to the page.
	if again := e.do(t, http.MethodGet, s.path()+"/", "", "", nil); again.status != http.StatusOK || string(again.body) != page {
		t.Errorf("GET %s/: %d, not the page", s.path(), again.status)
	}
}

func TestUISessionPageServices(t *testing.T) {
	e := newUIEnv(t)
	// Single-tenant: no customer line.
	s := e.newSession(t, "", []string{"file_upload", "google_drive"}, "https://app.example/ok", "https://app.example/no")
	page := string(e.do(t, http.MethodGet, s.path(), "", "", nil).body)
	if strings.Contains(page, "customer-name") {
		t.Error("single-tenant page shows a customer")
	}
	if !strings.Contains(page, `id="dropzone"`) || !strings.Contains(page, "Google Drive import is not set up on this server") {
		t.Errorf("upload + drive session: want the drop zone and the Drive note:\n%s", page)
	}

	// A Drive-only session cannot be created through the API; one in the
	// store (say, from an older version) gets the note and no upload.
	sess, token, err := e.store.CreateSession(store.Session{
		ProjectID: e.project.ID, OwnerID: e.project.ID, Services: []string{"google_drive"},
		SuccessURL: "https://app.example/ok", CancelURL: "https://app.example/no",
	}, time.Hour, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	_ = sess
	drive := uiSession{token: token}
	page = string(e.do(t, http.MethodGet, drive.path(), "", "", nil).body)
	if strings.Contains(page, `id="dropzone"`) || !strings.Contains(page, "Google Drive import is not set up on this server. Ask the site that sent you here") {
		t.Errorf("drive-only session: want the note and no drop zone:\n%s", page)
	}
	wantUIError(t, e.uploadMultipart(t, drive.path()+"/upload", "", [3]string{"file", "a.txt", "hello"}), http.StatusForbidden, "does not allow file uploads")

	r := e.postJSON(t, "/session/single-tenant", map[string]any{"project_id": e.project.ID, "services": []string{"google_drive"},
		"success_url": "https://app.example/ok", "cancel_url": "https://app.example/no"})
	wantUIError(t, r, http.StatusBadRequest, "Google Drive import is not available")
}

func TestUISessionUnknownAndExpired(t *testing.T) {
	e := newUIEnv(t)
	s := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	jobID, _ := e.sessionUpload(t, s, "notes.txt", "a note about tides")

	unknown := uiSession{token: "nosuchtoken"}
	r := e.do(t, http.MethodGet, unknown.path(), "", "", nil)
	if r.status != http.StatusNotFound || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.body), "Upload link not found") {
		t.Errorf("unknown token: want a friendly 404 page, got %s", r)
	}
	wantSecurityHeaders(t, "unknown token page", r.header)
	wantUIError(t, e.do(t, http.MethodGet, unknown.path()+"/jobs", "", "", nil), http.StatusNotFound, "not valid")
	wantUIError(t, e.uploadMultipart(t, unknown.path()+"/upload", "", [3]string{"file", "a.txt", "hello"}), http.StatusNotFound, "not valid")

	e.advance(2 * time.Hour) // past the default 1 h
	r = e.do(t, http.MethodGet, s.path(), "", "", nil)
	if r.status != http.StatusGone || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.body), "Upload link expired") {
		t.Errorf("expired token: want a friendly 410 page, got %s", r)
	}
	if strings.Contains(string(r.body), "app.example") {
		t.Error("the expired page links to the session's URLs")
	}
	wantSecurityHeaders(t, "expired page", r.header)
	wantUIError(t, e.do(t, http.MethodGet, s.path()+"/jobs", "", "", nil), http.StatusGone, "expired")
	wantUIError(t, e.do(t, http.MethodGet, s.path()+"/jobs?job_id="+jobID, "", "", nil), http.StatusGone, "expired")
	wantUIError(t, e.uploadMultipart(t, s.path()+"/upload", "", [3]string{"file", "late.txt", "too late"}), http.StatusGone, "expired")
}

func TestUISessionEndsWithItsKey(t *testing.T) {
	e := newUIEnv(t)
	secret, k, err := e.store.CreateKey(e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	byOther := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	e.key = secret
	byRevoked := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	e.sessionUpload(t, byRevoked, "before.txt", "uploaded before the key was revoked")

	if _, err := e.store.RevokeKey(k.ID); err != nil {
		t.Fatal(err)
	}
	if r := e.do(t, http.MethodGet, byRevoked.path(), "", "", nil); r.status != http.StatusGone || !strings.Contains(string(r.body), "This upload link was withdrawn") {
		t.Errorf("page of a session whose key was revoked: %s, want 410 saying it was withdrawn", r)
	}
	wantUIError(t, e.uploadMultipart(t, byRevoked.path()+"/upload", "", [3]string{"file", "after.txt", "too late"}), http.StatusGone, "was withdrawn")
	wantUIError(t, e.do(t, http.MethodGet, byRevoked.path()+"/jobs", "", "", nil), http.StatusGone, "was withdrawn")
	// A session made with another key lives on.
	e.sessionUpload(t, byOther, "other.txt", "another key's session still works")
}

func TestUISessionBacklogIsBounded(t *testing.T) {
	e := newUIEnv(t, func(o *uiOptions) { o.maxPending = 2 })
	// With the workers stopped, every upload stays PENDING.
	if err := e.engine.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	e.sessionUpload(t, s, "one.txt", "first file")
	e.sessionUpload(t, s, "two.txt", "second file")
	r := e.uploadMultipart(t, s.path()+"/upload", "", [3]string{"file", "three.txt", "third file"})
	wantUIError(t, r, http.StatusTooManyRequests, "2 files waiting")
	if r.header.Get("Retry-After") == "" {
		t.Error("the 429 carries no Retry-After")
	}
	if n := len(e.sessionJobs(t, s)); n != 2 {
		t.Errorf("the refused upload was stored: the session has %d uploads", n)
	}
	// Another session of the same owner has its own bound.
	other := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	e.sessionUpload(t, other, "mine.txt", "another link's file")
}

func TestUISessionUploadStoresUnderSessionOwner(t *testing.T) {
	e := newUIEnv(t, func(o *uiOptions) { o.maxFileBytes = 4 << 10 })
	other, err := e.store.CreateCustomer(e.project.ID, "Initech", store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	s := e.newSession(t, e.customer.ID, []string{"file_upload"}, "https://app.example/ok", "https://app.example/no")

	name := "tab\there " + strings.Repeat("é", 300) + ".txt" // a control character, too long: cleaned, not refused
	_, docID := e.sessionUpload(t, s, name, "the harbour opens at dawn")
	d, err := e.store.Document(docID)
	if err != nil {
		t.Fatal(err)
	}
	if d.OwnerID != e.customer.ID || d.ProjectID != e.project.ID {
		t.Errorf("document owner %s project %s, want %s %s", d.OwnerID, d.ProjectID, e.customer.ID, e.project.ID)
	}
	if d.Metadata["session_id"] != s.SessionID {
		t.Errorf("document metadata %v lacks session_id %s", d.Metadata, s.SessionID)
	}
	if strings.ContainsRune(d.Name, '\t') || !strings.HasPrefix(d.Name, "tab here é") || len([]rune(d.Name)) > 200 {
		t.Errorf("document name %q was not cleaned", d.Name)
	}
	docs, _, _ := e.store.Documents(other.ID, "", 1000)
	if len(docs) != 0 {
		t.Errorf("the other customer has %d documents", len(docs))
	}

	// The request cannot choose the owner: a data part is refused.
	r := e.uploadMultipart(t, s.path()+"/upload", "",
		[3]string{"data", "", `{"owner_id":"` + other.ID + `"}`}, [3]string{"file", "a.txt", "hello"})
	wantUIError(t, r, http.StatusBadRequest, `unknown part "data"`)
	// The same errors as /upload/file.
	wantUIError(t, e.do(t, http.MethodPost, s.path()+"/upload", "", "application/json", strings.NewReader(`{}`)), http.StatusUnsupportedMediaType, "multipart/form-data")
	wantUIError(t, e.uploadMultipart(t, s.path()+"/upload", "", [3]string{"file", "big.txt", strings.Repeat("x", 5<<10)}), http.StatusRequestEntityTooLarge, "4 KiB")
	wantUIError(t, e.uploadMultipart(t, s.path()+"/upload", "", [3]string{"file", "blob.bin", "\x00\x01\x02\x03\xff\xfe\x00\x00binary"}), http.StatusUnsupportedMediaType, "supported types")
	wantUIError(t, e.uploadMultipart(t, s.path()+"/upload", "", [3]string{"file", "empty.txt", ""}), http.StatusBadRequest, "empty")
	wantUIError(t, e.uploadMultipart(t, s.path()+"/upload", ""), http.StatusBadRequest, "file part is missing")
	// An API key does not change anything: the token decides.
	r = e.uploadMultipart(t, s.path()+"/upload", e.key, [3]string{"file", "k.txt", "with a key"})
	if r.status != http.StatusOK {
		t.Fatalf("upload with a key: %s", r)
	}
	// Nothing else is reachable under the token.
	for _, p := range []string{"/documents", "/query", "/jobs/x", "/upload/file"} {
		if r := e.do(t, http.MethodGet, s.path()+p, "", "", nil); r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
			t.Errorf("GET %s under the token: %d", p, r.status)
		}
	}
}

func TestUISessionJobsOnlyThisSession(t *testing.T) {
	e := newUIEnv(t)
	s1 := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	s2 := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	sp := e.newSession(t, "", []string{"all"}, "https://app.example/ok", "https://app.example/no")

	j1, _ := e.sessionUpload(t, s1, "first.txt", "lighthouses guide ships")
	j2, _ := e.sessionUpload(t, s2, "second.txt", "tugboats push barges")
	jp, _ := e.sessionUpload(t, sp, "project.txt", "the project's own notes")
	// An upload of the same owner through the API, not through a session.
	r := e.uploadMultipart(t, "/upload/file", e.key, [3]string{"data", "", `{"owner_id":"` + e.customer.ID + `"}`}, [3]string{"file", "api.txt", "uploaded by the backend"})
	if r.status != http.StatusOK {
		t.Fatalf("api upload: %s", r)
	}
	ja := decodeUI[uiJob](t, r).JobID

	// Wait for the first job to end, then look through the session's own
	// endpoint.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.engine.WaitJob(ctx, j1); err != nil {
		t.Fatalf("job %s: %v", j1, err)
	}
	if jobs := e.sessionJobs(t, s1, j1); len(jobs) != 1 || jobs[0].Status != store.StatusSucceeded {
		t.Fatalf("job %s: %+v", j1, jobs)
	}

	all := e.sessionJobs(t, s1)
	if len(all) != 1 || all[0].JobID != j1 || all[0].Name != "first.txt" {
		t.Errorf("session 1 lists %+v, want only its own upload %s", all, j1)
	}
	// Jobs of another session, of the project, of the API: not found, so
	// left out.
	if got := e.sessionJobs(t, s1, j2, jp, ja, "job_nosuchjob", j1); len(got) != 1 || got[0].JobID != j1 {
		t.Errorf("session 1 polling others' jobs got %+v", got)
	}
	if got := e.sessionJobs(t, sp); len(got) != 1 || got[0].JobID != jp {
		t.Errorf("project session lists %+v", got)
	}
	many := make([]string, 201)
	for i := range many {
		many[i] = j1
	}
	wantUIError(t, e.do(t, http.MethodGet, s1.path()+"/jobs?"+url.Values{"job_id": many}.Encode(), "", "", nil), http.StatusBadRequest, "job_id")
}

func TestUISessionEscapesNames(t *testing.T) {
	e := newUIEnv(t, func(o *uiOptions) {
		o.projectName = `<script>window.__xss=1</script>Acme`
		o.customerName = xssName
	})
	s := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	page := string(e.do(t, http.MethodGet, s.path(), "", "", nil).body)
	for _, raw := range []string{"<script>window", "<img src=x"} {
		if strings.Contains(page, raw) {
			t.Errorf("page holds unescaped %q", raw)
		}
	}
	if !strings.Contains(page, "&lt;img src=x onerror=&#34;window.__xss=1&#34;&gt;.txt") {
		t.Errorf("customer name not shown escaped:\n%s", page)
	}

	jobID, _ := e.sessionUpload(t, s, xssName, "a harmless text file")
	r := e.do(t, http.MethodGet, s.path()+"/jobs?job_id="+jobID, "", "", nil)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("jobs Content-Type %q", ct)
	}
	if bytes.Contains(r.body, []byte("<img")) {
		t.Errorf("jobs JSON holds a raw tag: %s", r.body)
	}
	if jobs := decodeUI[struct{ Jobs []uiJob }](t, r).Jobs; len(jobs) != 1 || jobs[0].Name != xssName {
		t.Errorf("jobs %+v: want the name back as data", jobs)
	}

	// A browser writes a quote in a file's name as %22 (the HTML standard's
	// form encoding): the document is named with the quote.
	jobID, _ = e.sessionUpload(t, s, `%22quoted%22.md`, "another harmless text file")
	if jobs := decodeUI[struct{ Jobs []uiJob }](t, e.do(t, http.MethodGet, s.path()+"/jobs?job_id="+jobID, "", "", nil)).Jobs; len(jobs) != 1 || jobs[0].Name != `"quoted".md` {
		t.Errorf("jobs %+v: want the name \"quoted\".md", jobs)
	}
	// What is left of a path names nothing: the document is an upload.
	for _, name := range []string{"..", "/", "../../etc/passwd"} {
		jobID, _ = e.sessionUpload(t, s, name, "a text file with an odd name")
		want := map[string]string{"..": "upload", "/": "upload", "../../etc/passwd": "passwd"}[name]
		if jobs := decodeUI[struct{ Jobs []uiJob }](t, e.do(t, http.MethodGet, s.path()+"/jobs?job_id="+jobID, "", "", nil)).Jobs; len(jobs) != 1 || jobs[0].Name != want {
			t.Errorf("a file named %q: jobs %+v, want it named %q", name, jobs, want)
		}
	}
}

func TestUISessionRedirectsOnlyToStoredURLs(t *testing.T) {
	e := newUIEnv(t)
	s := e.newSession(t, "", []string{"all"}, "https://app.example/ok", "https://app.example/no")
	q := url.Values{"success_url": {"https://evil.example/a"}, "cancel_url": {"https://evil.example/b"},
		"redirect": {"https://evil.example/c"}, "next": {"javascript:alert(1)"}}
	r := e.do(t, http.MethodGet, s.path()+"?"+q.Encode(), "", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("page: %s", r)
	}
	page := string(r.body)
	if strings.Contains(page, "evil.example") || strings.Contains(page, "javascript:") {
		t.Error("the page uses a URL from the query string")
	}
	if !strings.Contains(page, `id="done" class="button primary" href="https://app.example/ok"`) ||
		!strings.Contains(page, `id="cancel" class="button secondary" href="https://app.example/no"`) {
		t.Errorf("Done and Cancel do not link to the stored URLs:\n%s", page)
	}
	// No route redirects with a token.
	for _, p := range []string{"/done", "/cancel", "/redirect"} {
		if r := e.do(t, http.MethodGet, s.path()+p+"?"+q.Encode(), "", "", nil); r.status/100 == 3 {
			t.Errorf("GET %s redirects", p)
		}
	}
	// The session endpoint refuses URLs a browser must not be sent to.
	for _, bad := range []string{"javascript:alert(1)", "/relative", "data:text/html,hi", "ftp://x.example/"} {
		r := e.postJSON(t, "/session/single-tenant", map[string]any{"project_id": e.project.ID, "services": []string{"all"},
			"success_url": bad, "cancel_url": "https://app.example/no"})
		wantUIError(t, r, http.StatusBadRequest, "success_url")
	}
}

func TestUIAssets(t *testing.T) {
	e := newUIEnv(t)
	for name, ctype := range map[string]string{
		"app.css": "text/css", "upload.js": "text/javascript", "console.js": "text/javascript",
	} {
		r := e.do(t, http.MethodGet, "/ui/assets/"+name, "", "", nil)
		if r.status != http.StatusOK || len(r.body) == 0 {
			t.Fatalf("GET %s: %d", name, r.status)
		}
		if got := r.header.Get("Content-Type"); !strings.HasPrefix(got, ctype) {
			t.Errorf("%s: Content-Type %q, want %s", name, got, ctype)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", name)
		}
		etag := r.header.Get("ETag")
		if etag == "" {
			t.Fatalf("%s: no ETag", name)
		}
		req, _ := http.NewRequest(http.MethodGet, e.base+"/ui/assets/"+name, nil)
		req.Header.Set("If-None-Match", etag)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("%s with If-None-Match: %d, want 304", name, resp.StatusCode)
		}
		// The versioned URL may be cached for good.
		v := strings.Trim(etag, `"`)
		if cc := e.do(t, http.MethodGet, "/ui/assets/"+name+"?v="+v, "", "", nil).header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s?v=%s: Cache-Control %q", name, v, cc)
		}
	}
	for _, p := range []string{"/ui/assets/nope.js", "/ui/assets/", "/ui/assets/..%2fui.go", "/ui/assets/%2e%2e/templates/upload.html"} {
		if r := e.do(t, http.MethodGet, p, "", "", nil); r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, r.status)
		}
	}
}

func TestUIConsoleAndMe(t *testing.T) {
	e := newUIEnv(t)
	r := e.do(t, http.MethodGet, "/console", "", "", nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `id="api-key"`) {
		t.Fatalf("GET /console: %s", r)
	}
	wantSecurityHeaders(t, "console", r.header)
	if !strings.Contains(string(r.body), `src="/ui/assets/console.js?v=`) {
		t.Error("console does not load console.js")
	}

	wantUIError(t, e.do(t, http.MethodGet, "/me", "", "", nil), http.StatusUnauthorized, "API key")
	wantUIError(t, e.do(t, http.MethodGet, "/me", "dsk_wrong", "", nil), http.StatusUnauthorized, "API key")
	r = e.do(t, http.MethodGet, "/me", e.key, "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /me: %s", r)
	}
	me := decodeUI[map[string]string](t, r)
	if me["project_id"] != e.project.ID || me["name"] != e.project.Name {
		t.Errorf("GET /me = %v", me)
	}
}

// TestUISessionClose: the page ends its session as its user leaves by
// Done or Cancel. The link then opens nothing more, saying it was
// closed, and the files uploaded through it stay.
func TestUISessionClose(t *testing.T) {
	e := newUIEnv(t)
	for _, how := range []string{"done", "cancel"} {
		s := e.newSession(t, e.customer.ID, []string{"file_upload"}, "https://app.example/ok", "https://app.example/no")
		if page := string(e.do(t, http.MethodGet, s.path(), "", "", nil).body); !strings.Contains(page, `data-close-url="`+s.path()+`/close"`) {
			t.Fatalf("the page does not name its close URL:\n%s", page)
		}
		_, docID := e.sessionUpload(t, s, "notes.txt", "Notes about the harbour.")
		wantUIError(t, e.do(t, http.MethodPost, s.path()+"/close?how=later", "", "", nil), http.StatusBadRequest, "how must be done or cancel")
		if r := e.do(t, http.MethodPost, s.path()+"/close?how="+how, "", "", nil); r.status != http.StatusNoContent {
			t.Fatalf("close by %s: %s", how, r)
		}
		page := e.do(t, http.MethodGet, s.path(), "", "", nil)
		if page.status != http.StatusGone || !strings.Contains(string(page.body), "This upload link was closed") {
			t.Errorf("the page of a session closed by %s: %s", how, page)
		}
		wantUIError(t, e.uploadMultipart(t, s.path()+"/upload", "", [3]string{"file", "more.txt", "More notes."}), http.StatusGone, "was closed")
		wantUIError(t, e.do(t, http.MethodGet, s.path()+"/jobs", "", "", nil), http.StatusGone, "was closed")
		wantUIError(t, e.do(t, http.MethodPost, s.path()+"/close?how="+how, "", "", nil), http.StatusGone, "was closed")
		if d, err := e.store.Document(docID); err != nil || d.OwnerID != e.customer.ID {
			t.Errorf("the file uploaded before closing: %+v, %v", d, err)
		}
	}
	wantUIError(t, e.do(t, http.MethodPost, "/s/nope/close?how=done", "", "", nil), http.StatusNotFound, "not valid")

	// An expired session is said to have expired, not to be closed.
	s := e.newSession(t, e.customer.ID, []string{"file_upload"}, "https://app.example/ok", "https://app.example/no")
	e.advance(2 * time.Hour)
	wantUIError(t, e.do(t, http.MethodPost, s.path()+"/close?how=done", "", "", nil), http.StatusGone, "has expired")
}

// TestUISessionAskedForAsItsKeyIsRevoked: a session asked for with a key
// revoked while the request was still being read is refused, not handed
// out to outlive the key.
func TestUISessionAskedForAsItsKeyIsRevoked(t *testing.T) {
	e := newUIEnv(t)
	secret, key, err := e.store.CreateKey(e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"project_id": e.project.ID, "customer_id": e.customer.ID, "services": []string{"file_upload"},
		"success_url": "https://app.example/ok", "cancel_url": "https://app.example/no"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, e.base+"/session/multi-tenant", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	status, body := sendWithHeldBody(t, req, b, func() {
		if _, err := e.store.RevokeKey(key.ID); err != nil {
			t.Fatal(err)
		}
	})
	if status != http.StatusUnauthorized || !strings.Contains(body, "revoked API key") {
		t.Errorf("session asked for while its key was revoked: %d %s", status, body)
	}
}

// A file that was still coming to an upload link when the link's key was
// revoked is not indexed.
func TestUISessionUploadAsItsKeyIsRevoked(t *testing.T) {
	e := newUIEnv(t)
	secret, key, err := e.store.CreateKey(e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.key = secret
	s := e.newSession(t, e.customer.ID, []string{"file_upload"}, "https://app.example/ok", "https://app.example/no")
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "late.txt")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte("Notes that came too late."))
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, e.base+s.path()+"/upload", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	status, got := sendWithHeldBody(t, req, body.Bytes(), func() {
		if _, err := e.store.RevokeKey(key.ID); err != nil {
			t.Fatal(err)
		}
	})
	if status != http.StatusGone || !strings.Contains(got, "was withdrawn") {
		t.Errorf("a file that came as its link's key was revoked: %d %s", status, got)
	}
	if docs, _, err := e.store.Documents(e.customer.ID, "", 10); err != nil || len(docs) != 0 {
		t.Errorf("documents after the refused upload: %+v, %v", docs, err)
	}
}

// sendWithHeldBody sends req with body, calling meanwhile once the server
// has asked for the body (Expect: 100-continue), which it does once past
// its checks of the headers, and then the rest of the body.
func sendWithHeldBody(t *testing.T, req *http.Request, body []byte, meanwhile func()) (int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	req.Body = pr
	req.ContentLength = int64(len(body))
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- result{status: resp.StatusCode, body: string(b)}
	}()
	if _, err := pw.Write(body[:10]); err != nil { // returns once the server asked for the body
		t.Fatal(err)
	}
	meanwhile()
	pw.Write(body[10:])
	pw.Close()
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	return got.status, got.body
}

// Uploads sent at once through one link are held to the link's bound
// while their bodies are still on their way: each takes its place before
// its body is read. (Counted only once stored, all of them got in.)
func TestUISessionBacklogHoldsForUploadsSentAtOnce(t *testing.T) {
	const bound, sent = 3, 10
	e := newUIEnv(t, func(o *uiOptions) { o.maxPending = bound })
	// With the workers stopped, every upload stays PENDING.
	if err := e.engine.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	type result struct {
		status int
		body   string
	}
	results := make(chan result, sent)
	finish := make(chan struct{}) // closed: the bodies end
	for i := range sent {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		req, _ := http.NewRequest(http.MethodPost, e.base+s.path()+"/upload", pr)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- result{status: -1, body: err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- result{resp.StatusCode, string(b)}
		}()
		go func() {
			// The start of the body, then the rest once the test says.
			fw, _ := mw.CreateFormFile("file", fmt.Sprintf("part-%d.txt", i))
			fw.Write([]byte(fmt.Sprintf("the harbour log, part %d", i)))
			<-finish
			mw.Close()
			pw.Close()
		}()
	}
	// Those over the bound are refused while every body is still open.
	var got []result
	timeout := time.After(30 * time.Second)
	for len(got) < sent-bound {
		select {
		case r := <-results:
			got = append(got, r)
		case <-timeout:
			close(finish)
			t.Fatalf("%d of %d uploads were answered while their bodies were on their way; want the %d over the bound of %d refused at once", len(got), sent, sent-bound, bound)
		}
	}
	close(finish)
	for _, r := range got {
		if r.status != http.StatusTooManyRequests || !strings.Contains(r.body, "arriving") {
			t.Fatalf("an upload answered before its body ended: %d %s; want 429", r.status, r.body)
		}
	}
	// The others end their bodies and are taken.
	for range bound {
		if r := <-results; r.status != http.StatusOK {
			t.Errorf("an upload within the bound: %d %s", r.status, r.body)
		}
	}
	if n := len(e.sessionJobs(t, s)); n != bound {
		t.Errorf("the session holds %d uploads, want %d", n, bound)
	}
}
