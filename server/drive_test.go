package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"

	"github.com/docsift/docsift/drive"
	"github.com/docsift/docsift/internal/drivetest"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
)

// Credentials of the OAuth client the stand-in knows.
const (
	driveClientID     = "docsift-test.apps.googleusercontent.com"
	driveClientSecret = "GOCSPX-server-test-secret"
)

// withDriveClient configures Drive import against g once the base URL is
// known, registering the redirect URI with g as an operator does with
// Google. A nil g leaves Drive import off.
func withDriveClient(t *testing.T, g *drivetest.Server, log *slog.Logger) func(*server.Config) {
	return func(cfg *server.Config) {
		if g == nil {
			return
		}
		redirect := server.DriveRedirectURL(cfg.BaseURL)
		g.AllowRedirect(redirect)
		c, err := drive.New(drive.Config{
			ClientID: driveClientID, ClientSecret: driveClientSecret, RedirectURL: redirect,
			Endpoints: drive.Endpoints{AuthURL: g.AuthURL, TokenURL: g.TokenURL, RevokeURL: g.RevokeURL, APIURL: g.APIURL},
			RetryBase: time.Millisecond,
			Log:       log,
		})
		if err != nil {
			t.Fatalf("drive client: %v", err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		cfg.Drive = c
	}
}

func withDrive(g *drivetest.Server) func(*envOptions) { return func(o *envOptions) { o.drive = g } }

// newDriveEnv is a running docsift with Drive import against a fresh
// stand-in.
func newDriveEnv(t *testing.T, opts ...func(*envOptions)) (*env, *drivetest.Server) {
	t.Helper()
	g := drivetest.New(t, driveClientID, driveClientSecret)
	return newEnv(t, append([]func(*envOptions){withDrive(g)}, opts...)...), g
}

// visitor is one end user's browser: its own cookies, following redirects
// like a browser does.
type visitor struct {
	t  *testing.T
	hc *http.Client
}

func newVisitor(t *testing.T) *visitor {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &visitor{t: t, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// do sends a request and returns the response with its body read; url is
// where the redirects ended.
func (v *visitor) do(method, rawURL string, body any) (response, *url.URL) {
	v.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(jsonBytes(body)))
	}
	req, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		v.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := v.hc.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{req: method + " " + resp.Request.URL.Path, status: resp.StatusCode, header: resp.Header, body: b}, resp.Request.URL
}

// driveSession is an upload session of project A as a visitor sees it.
type driveSession struct {
	id, token, url string
}

func (e *env) newDriveSession(t *testing.T, services ...string) driveSession {
	t.Helper()
	r := e.postJSON(t, "/session/single-tenant", e.a.key, map[string]any{
		"project_id": e.a.projectID, "services": services,
		"success_url": "https://app.example/done", "cancel_url": "https://app.example/cancel",
	})
	s := decodeAs[apiSession](t, r)
	return driveSession{id: s.SessionID, token: strings.TrimPrefix(s.URL, e.base+"/s/"), url: s.URL}
}

// beginSignIn asks the page's connect endpoint for Google's consent URL.
func (v *visitor) beginSignIn(s driveSession) string {
	v.t.Helper()
	r, _ := v.do(http.MethodPost, s.url+"/drive/connect", nil)
	var body struct {
		AuthURL string `json:"auth_url"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil || body.AuthURL == "" {
		v.t.Fatalf("connect: %s", r)
	}
	return body.AuthURL
}

// connect signs the visitor in for s, all redirects followed, and returns
// the page it ended on.
func (v *visitor) connect(s driveSession) (response, *url.URL) {
	v.t.Helper()
	return v.do(http.MethodGet, v.beginSignIn(s), nil)
}

// consentOnly follows the consent URL up to Google's redirect back and
// returns that callback URL without visiting it.
func consentOnly(t *testing.T, authURL string) string {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("consent: HTTP %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

type apiDriveItem struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Folder     bool    `json:"folder"`
	Size       *int64  `json:"size"`
	Modified   *string `json:"modified_time"`
	Importable bool    `json:"importable"`
	Refused    string  `json:"refused"`
}

type apiDriveListing struct {
	Files         []apiDriveItem `json:"files"`
	NextPageToken string         `json:"next_page_token"`
}

func (v *visitor) list(s driveSession, query string) apiDriveListing {
	v.t.Helper()
	r, _ := v.do(http.MethodGet, s.url+"/drive/files"+query, nil)
	return decodeAs[apiDriveListing](v.t, r)
}

func (v *visitor) importFile(s driveSession, id string) response {
	v.t.Helper()
	r, _ := v.do(http.MethodPost, s.url+"/drive/import", map[string]string{"file_id": id})
	return r
}

func byName(items []apiDriveItem) map[string]apiDriveItem {
	m := map[string]apiDriveItem{}
	for _, it := range items {
		m[it.Name] = it
	}
	return m
}

func TestDriveOffSaysWhatToSet(t *testing.T) {
	e := newEnv(t)
	r := e.postJSON(t, "/session/single-tenant", e.a.key, map[string]any{
		"project_id": e.a.projectID, "services": []string{"google_drive"},
		"success_url": "https://app.example/done", "cancel_url": "https://app.example/cancel",
	})
	wantError(t, r, http.StatusBadRequest, "services", "Google Drive", "--google-client-id", "--google-client-secret")

	s := e.newDriveSession(t, "file_upload", "google_drive")
	page := e.get(t, "/s/"+s.token, "")
	// The end user is told, in words for them: the flags are the
	// operator's business, and the API's errors name them.
	if !strings.Contains(string(page.body), "Google Drive import is not set up on this server") || strings.Contains(string(page.body), "--google-client-id") || strings.Contains(string(page.body), "Import from Google Drive") {
		t.Errorf("page of a Drive session without a client: want a note without the flags, and no button:\n%s", page.body)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/drive/connect"}, {http.MethodGet, "/drive/files"},
		{http.MethodPost, "/drive/import"}, {http.MethodPost, "/drive/disconnect"},
	} {
		wantError(t, e.do(t, c.method, "/s/"+s.token+c.path, "", "application/json", strings.NewReader(`{"file_id":"x"}`)),
			http.StatusServiceUnavailable, "--google-client-id", "--google-client-secret")
	}
	cb := e.get(t, server.DriveCallbackPath+"?state=x&code=y", "")
	if cb.status != http.StatusNotFound || !strings.Contains(string(cb.body), "not set up on this server") || strings.Contains(string(cb.body), "--google-client-id") {
		t.Errorf("callback without a client: %s", cb)
	}
}

func TestDriveSessionServices(t *testing.T) {
	e, _ := newDriveEnv(t)
	driveOnly := e.newDriveSession(t, "google_drive")
	page := string(e.get(t, "/s/"+driveOnly.token, "").body)
	for _, want := range []string{"Import from Google Drive", `id="drive"`, `data-drive-url="/s/` + driveOnly.token + `/drive"`, `src="/ui/assets/drive.js?v=`, `id="file-list"`} {
		if !strings.Contains(page, want) {
			t.Errorf("Drive-only page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="dropzone"`) || strings.Contains(page, "not available") {
		t.Errorf("Drive-only page offers uploads or says Drive is unavailable")
	}
	all := e.newDriveSession(t, "all")
	page = string(e.get(t, "/s/"+all.token, "").body)
	if !strings.Contains(page, `id="dropzone"`) || !strings.Contains(page, "Import from Google Drive") {
		t.Errorf("an all session offers both")
	}
	uploadOnly := e.newDriveSession(t, "file_upload")
	page = string(e.get(t, "/s/"+uploadOnly.token, "").body)
	if strings.Contains(page, "Google Drive") || strings.Contains(page, "drive.js") {
		t.Errorf("a file_upload session shows Drive")
	}
	wantError(t, e.do(t, http.MethodPost, "/s/"+uploadOnly.token+"/drive/connect", "", "", nil), http.StatusForbidden, "Google Drive")
	// Drive-only sessions cannot upload from the device.
	body, ct := multipartBody(t, filePart("a.txt", []byte("hello")))
	wantError(t, e.do(t, http.MethodPost, "/s/"+driveOnly.token+"/upload", "", ct, strings.NewReader(string(body))), http.StatusForbidden, "file uploads")

	// Before signing in, the Drive endpoints ask for it.
	v := newVisitor(t)
	r, _ := v.do(http.MethodGet, driveOnly.url+"/drive/files", nil)
	wantError(t, r, http.StatusUnauthorized, "sign in")
}

func TestDriveConsentDenied(t *testing.T) {
	e, g := newDriveEnv(t)
	g.DenyConsent(true)
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	page, at := v.connect(s)
	if at.Path != "/s/"+s.token || at.Query().Get("drive") != "denied" {
		t.Fatalf("after refusing consent the browser is at %s", at)
	}
	if page.status != http.StatusOK || !strings.Contains(string(page.body), "access was not allowed") || !strings.Contains(string(page.body), "Import from Google Drive") {
		t.Errorf("the page after a refusal: %s", page)
	}
	r, _ := v.do(http.MethodGet, s.url+"/drive/files", nil)
	wantError(t, r, http.StatusUnauthorized, "sign in")
	if g.LiveGrants() != 0 {
		t.Error("a refused consent left a grant")
	}
	// The page's parameter only selects known words.
	page, _ = v.do(http.MethodGet, s.url+"?drive=<script>alert(1)</script>", nil)
	if strings.Contains(string(page.body), "<script>alert") {
		t.Error("the drive parameter reached the page")
	}
}

// TestDriveClientRejected: a server whose OAuth client Google refuses (a
// wrong secret) tells the operator in its log which flags to check, and
// the user not to try again as if it were their sign-in that failed.
func TestDriveClientRejected(t *testing.T) {
	g := drivetest.New(t, driveClientID, "GOCSPX-the-secret-google-has")
	e := newEnv(t, withDrive(g))
	s := e.newDriveSession(t, "file_upload", "google_drive")
	v := newVisitor(t)
	page, at := v.connect(s)
	if at.Query().Get("drive") != "unavailable" || !strings.Contains(string(page.body), "not working on this server right now, whoever signs in") {
		t.Errorf("after a sign-in with a refused client the browser is at %s: %s", at, page)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "check --google-client-id and --google-client-secret") {
		t.Errorf("the log does not name the flags to check:\n%s", logs)
	}
}

// TestDriveImportGoogleDocIsIndexed signs in, lists, imports a Google Doc
// (exported as PDF) and a text file, and finds the Doc's words by a query.
func TestDriveImportGoogleDocIsIndexed(t *testing.T) {
	e, g := newDriveEnv(t, withMaxFileBytes(64<<10))
	reports := g.AddFile(drivetest.File{Name: "Reports", MimeType: drivetest.FolderType})
	doc := g.AddFile(drivetest.File{Name: "Harbour plan", MimeType: drivetest.DocumentType, Parents: []string{reports.ID},
		Exports: map[string][]byte{"application/pdf": testpdf.Pages([]string{
			"Harbour plan. The quartermaster orders new mooring lines every spring.",
			"The lighthouse keeper logs the fog signal hours in the blue ledger.",
		})}})
	notes := g.AddFile(drivetest.File{Name: "ferry notes.txt", MimeType: "text/plain", Parents: []string{reports.ID},
		Content: []byte("The ferry timetable changes with the summer schedule.")})
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)

	page, at := v.connect(s)
	if at.Query().Get("drive") != "connected" || !strings.Contains(string(page.body), `data-connected="true"`) {
		t.Fatalf("after consent the browser is at %s: %s", at, page)
	}
	root := v.list(s, "")
	if len(root.Files) != 1 || !root.Files[0].Folder || root.Files[0].Type != "Folder" {
		t.Fatalf("root: %+v", root.Files)
	}
	inFolder := byName(v.list(s, "?folder="+url.QueryEscape(reports.ID)).Files)
	d, n := inFolder["Harbour plan"], inFolder["ferry notes.txt"]
	if !d.Importable || d.Type != "Google Doc" || d.Size != nil || d.Modified == nil {
		t.Errorf("the Doc is listed as %+v", d)
	}
	if !n.Importable || n.Size == nil || *n.Size != int64(len("The ferry timetable changes with the summer schedule.")) {
		t.Errorf("the text file is listed as %+v", n)
	}
	found := v.list(s, "?q=harbour")
	if len(found.Files) != 1 || found.Files[0].ID != doc.ID {
		t.Errorf("search for harbour: %+v", found.Files)
	}

	var jobs []string
	for _, id := range []string{doc.ID, notes.ID} {
		up := decodeAs[apiUpload](t, v.importFile(s, id))
		if up.Status != store.StatusPending {
			t.Errorf("import answered status %s", up.Status)
		}
		jobs = append(jobs, up.JobID)
	}
	for _, j := range jobs {
		if job := e.waitJob(t, e.a.key, j); job.Status != store.StatusSucceeded {
			t.Fatalf("job %s: %s %s", j, job.Status, job.Error)
		}
	}
	if g.Exports(doc.ID) != 1 {
		t.Errorf("the Doc was exported %d times", g.Exports(doc.ID))
	}

	q := e.query(t, e.a.key, "/query/project", map[string]any{"project_id": e.a.projectID, "query": "lighthouse keeper fog signal ledger", "top_k": 3})
	if len(q.Chunks) == 0 || q.Chunks[0].DocumentName != "Harbour plan" || !strings.Contains(q.Chunks[0].Text, "fog signal") {
		t.Fatalf("the Doc's text is not found: %+v", q.Chunks)
	}
	if q.Chunks[0].Page == nil || *q.Chunks[0].Page != 2 {
		t.Errorf("the chunk's page is %v, want 2 (the export keeps pages)", q.Chunks[0].Page)
	}
	docs, _, err := e.store.Documents(e.a.projectID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.Metadata["session_id"] != s.id || d.Metadata["source"] != "google_drive" || d.Metadata["google_drive_file_id"] == "" {
			t.Errorf("document %s has metadata %v", d.Name, d.Metadata)
		}
	}
	// The imports are the session's uploads, as the page polls them.
	r, _ := v.do(http.MethodGet, s.url+"/jobs", nil)
	if list := decodeAs[struct {
		Jobs []struct{ Name, Status string }
	}](t, r); len(list.Jobs) != 2 || list.Jobs[0].Name != "Harbour plan" || list.Jobs[1].Status != store.StatusSucceeded {
		t.Errorf("session jobs: %+v", list.Jobs)
	}

	// A file imported again replaces its earlier import: the owner has
	// one document of it, the newer, not two.
	again := decodeAs[apiUpload](t, v.importFile(s, notes.ID))
	if job := e.waitJob(t, e.a.key, again.JobID); job.Status != store.StatusSucceeded {
		t.Fatalf("the second import: %s %s", job.Status, job.Error)
	}
	docs, _, _ = e.store.Documents(e.a.projectID, "", 1000)
	var ofNotes []string
	for _, d := range docs {
		if d.Metadata["google_drive_file_id"] == notes.ID {
			ofNotes = append(ofNotes, d.ID)
		}
	}
	if len(ofNotes) != 1 || ofNotes[0] != again.DocumentID {
		t.Errorf("documents of the file imported twice: %v, want only the second import's %s", ofNotes, again.DocumentID)
	}
}

// TestDriveRefusesBeforeDownloading: files docsift cannot take are shown
// as refused in the listing and refused on import without a download.
func TestDriveRefusesBeforeDownloading(t *testing.T) {
	e, g := newDriveEnv(t) // 4 KiB file limit
	huge := g.AddFile(drivetest.File{Name: "archive scan.pdf", MimeType: "application/pdf", Size: 2 << 30})
	photo := g.AddFile(drivetest.File{Name: "pier.gif", MimeType: "image/gif", Content: []byte("GIF89a")})
	legacy := g.AddFile(drivetest.File{Name: "old.doc", MimeType: "application/msword", Content: []byte("doc")})
	form := g.AddFile(drivetest.File{Name: "Survey", MimeType: "application/vnd.google-apps.form"})
	folder := g.AddFile(drivetest.File{Name: "Archive", MimeType: drivetest.FolderType})
	longDoc := g.AddFile(drivetest.File{Name: "Long report", MimeType: drivetest.DocumentType,
		Exports: map[string][]byte{"application/pdf": []byte(strings.Repeat("x", 32<<20))}})
	s := e.newDriveSession(t, "all")
	v := newVisitor(t)
	v.connect(s)

	items := byName(v.list(s, "").Files)
	for name, want := range map[string]string{
		"archive scan.pdf": "the file is 2 GiB, over the limit of 4 KiB",
		"pier.gif":         "PNG, JPEG and TIFF",
		"old.doc":          "legacy Microsoft Office",
		"Survey":           "Google Form files cannot be imported",
	} {
		it := items[name]
		if it.Importable || !strings.Contains(it.Refused, want) {
			t.Errorf("%s is listed as %+v, want refused with %q", name, it, want)
		}
	}
	if it := items["Archive"]; !it.Folder || it.Importable || it.Refused != "" {
		t.Errorf("a folder is listed as %+v", it)
	}
	if it := items["Long report"]; !it.Importable {
		t.Errorf("a Doc (size unknown until exported) is listed as %+v", it)
	}

	e.unchanged(t, func() {
		wantError(t, v.importFile(s, huge.ID), http.StatusRequestEntityTooLarge, "2 GiB", "over the limit of 4 KiB")
		wantError(t, v.importFile(s, photo.ID), http.StatusUnsupportedMediaType, "PNG, JPEG and TIFF")
		wantError(t, v.importFile(s, legacy.ID), http.StatusUnsupportedMediaType, "PDF or DOCX")
		wantError(t, v.importFile(s, form.ID), http.StatusUnsupportedMediaType, "cannot be imported")
		wantError(t, v.importFile(s, folder.ID), http.StatusBadRequest, "folder")
		wantError(t, v.importFile(s, longDoc.ID), http.StatusRequestEntityTooLarge, "over the limit of 4 KiB")
		wantError(t, v.importFile(s, "noSuchFile"), http.StatusNotFound, "Google Drive")
		wantError(t, v.importFile(s, "../../etc/passwd"), http.StatusBadRequest, "file_id")
		wantError(t, v.importFile(s, ""), http.StatusBadRequest, "file_id")
		r, _ := v.do(http.MethodPost, s.url+"/drive/import", `{"file_id": 3}`)
		wantError(t, r, http.StatusBadRequest, "file_id")
		r, _ = v.do(http.MethodGet, s.url+"/drive/files?folder=a'b", nil)
		wantError(t, r, http.StatusBadRequest, "folder")
		r, _ = v.do(http.MethodGet, s.url+"/drive/files?q="+strings.Repeat("a", 201), nil)
		wantError(t, r, http.StatusBadRequest, "q")
	})
	for _, f := range []drivetest.File{huge, photo, legacy} {
		if n, _ := g.Downloads(f.ID); n != 0 {
			t.Errorf("%s was downloaded %d times before being refused", f.Name, n)
		}
	}
	if _, served := g.Downloads(longDoc.ID); served >= 32<<20 {
		t.Errorf("the whole 32 MiB export was read (%d bytes) for a 4 KiB limit", served)
	}
}

func TestDriveRateLimitedByGoogle(t *testing.T) {
	e, g := newDriveEnv(t)
	f := g.AddFile(drivetest.File{Name: "a.txt", MimeType: "text/plain", Content: []byte("tide tables for the north pier")})
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	v.connect(s)

	// A short burst of 403 rateLimitExceeded is retried with back-off.
	g.RateLimit(2)
	up := decodeAs[apiUpload](t, v.importFile(s, f.ID))
	e.waitJob(t, e.a.key, up.JobID)

	// A lasting one is a 429 the page waits out.
	g.RateLimit(1000)
	r := v.importFile(s, f.ID)
	wantError(t, r, http.StatusTooManyRequests, "Google Drive is limiting requests")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	r, _ = v.do(http.MethodGet, s.url+"/drive/files", nil)
	wantError(t, r, http.StatusTooManyRequests, "try again")
	g.RateLimit(0)
	v.list(s, "") // still connected
}

func TestDriveExpiredAccessTokenIsRefreshed(t *testing.T) {
	e, g := newDriveEnv(t)
	g.AddFile(drivetest.File{Name: "a.txt", MimeType: "text/plain", Content: []byte("a")})
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	v.connect(s)
	g.ExpireAccessTokens()
	if l := v.list(s, ""); len(l.Files) != 1 {
		t.Fatalf("listing after the access token expired: %+v", l)
	}
	if g.Refreshes() != 1 {
		t.Errorf("%d refreshes, want 1", g.Refreshes())
	}
}

// TestDriveStateChecks: the callback takes a state once, only from the
// browser that began the sign-in, for the session it began in.
func TestDriveStateChecks(t *testing.T) {
	e, g := newDriveEnv(t)
	s := e.newDriveSession(t, "google_drive")
	other := e.newDriveSession(t, "google_drive")

	t.Run("wrong state", func(t *testing.T) {
		v := newVisitor(t)
		v.beginSignIn(s)
		r, _ := v.do(http.MethodGet, e.base+server.DriveCallbackPath+"?state=forged&code=4/whatever", nil)
		wantPage(t, r, http.StatusBadRequest, "not valid or was already used")
		r, _ = v.do(http.MethodGet, e.base+server.DriveCallbackPath, nil)
		wantPage(t, r, http.StatusBadRequest, "not valid")
	})

	t.Run("reused state", func(t *testing.T) {
		v := newVisitor(t)
		callback := consentOnly(t, v.beginSignIn(s))
		if _, at := v.do(http.MethodGet, callback, nil); at.Query().Get("drive") != "connected" {
			t.Fatalf("the first use ended at %s", at)
		}
		v.beginSignIn(s) // a fresh cookie, so only the state's single use refuses
		r, _ := v.do(http.MethodGet, callback, nil)
		wantPage(t, r, http.StatusBadRequest, "already used")
	})

	t.Run("another session's state", func(t *testing.T) {
		before := g.LiveGrants()
		victim, attacker := newVisitor(t), newVisitor(t)
		victim.beginSignIn(s)
		// The attacker starts a sign-in for their own session and gets the
		// victim's browser to complete it.
		callback := consentOnly(t, attacker.beginSignIn(other))
		r, _ := victim.do(http.MethodGet, callback, nil)
		wantPage(t, r, http.StatusBadRequest, "another browser or for another upload link")
		if g.LiveGrants() != before {
			t.Error("a refused callback made a grant")
		}
		// The state is spent: the attacker cannot use it either.
		r, _ = attacker.do(http.MethodGet, callback, nil)
		wantPage(t, r, http.StatusBadRequest, "already used")
	})

	t.Run("session expired during the sign-in", func(t *testing.T) {
		v := newVisitor(t)
		callback := consentOnly(t, v.beginSignIn(s))
		e.clock.Advance(2 * time.Hour)
		defer e.clock.Advance(-2 * time.Hour)
		r, _ := v.do(http.MethodGet, callback, nil)
		wantPage(t, r, http.StatusGone, "expired")
	})
}

// wantPage asserts an HTML page with status holding text.
func wantPage(t *testing.T, r response, status int, text string) {
	t.Helper()
	if r.status != status || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), text) {
		t.Errorf("want an HTML page %d saying %q: %s", status, text, r)
	}
}

// TestDriveTokensNotLogged runs the whole flow with debug logging and
// looks for every secret of it in the log: tokens, codes, states, the PKCE
// verifier's challenge and the session token.
func TestDriveTokensNotLogged(t *testing.T) {
	e, g := newDriveEnv(t)
	f := g.AddFile(drivetest.File{Name: "a.txt", MimeType: "text/plain", Content: []byte("buoys and beacons")})
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	v.connect(s)
	g.ExpireAccessTokens() // a refresh, too
	v.list(s, "")
	up := decodeAs[apiUpload](t, v.importFile(s, f.ID))
	e.waitJob(t, e.a.key, up.JobID)
	// A failed exchange is logged: its message must not carry the code.
	callback := consentOnly(t, v.beginSignIn(s))
	cb, _ := url.Parse(callback)
	q := cb.Query()
	q.Set("code", "4/not-the-code")
	cb.RawQuery = q.Encode()
	if _, at := v.do(http.MethodGet, cb.String(), nil); at.Query().Get("drive") != "failed" {
		t.Errorf("a bad code ended at %s", at)
	}
	r, _ := v.do(http.MethodPost, s.url+"/drive/disconnect", nil)
	if r.status != http.StatusOK {
		t.Fatalf("disconnect: %s", r)
	}

	logs := e.logs.String()
	secrets := append(g.Secrets(), s.token, driveClientSecret)
	for _, q := range g.AuthRequests() {
		secrets = append(secrets, q.Get("state"), q.Get("code_challenge"))
	}
	for _, secret := range secrets {
		if secret != "" && strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret (%.12s…)", secret)
		}
	}
	if !strings.Contains(logs, `route=`+server.DriveCallbackPath) || !strings.Contains(logs, "route=/s/:token/drive/import") {
		t.Error("the Drive routes are not in the request log")
	}
}

func TestDriveRevokedOnDisconnectAndExpiry(t *testing.T) {
	e, g := newDriveEnv(t, func(o *envOptions) { o.cfg.SessionTTL = 3 * time.Second })
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	v.connect(s)

	r, _ := v.do(http.MethodPost, s.url+"/drive/disconnect", nil)
	if got := decodeAs[map[string]bool](t, r); !got["disconnected"] || !got["revoked"] {
		t.Errorf("disconnect answered %v", got)
	}
	waitRevoked(t, g)
	r, _ = v.do(http.MethodGet, s.url+"/drive/files", nil)
	wantError(t, r, http.StatusUnauthorized, "sign in")
	if page := string(e.get(t, "/s/"+s.token, "").body); !strings.Contains(page, `data-connected="false"`) {
		t.Error("the page still shows Drive connected")
	}

	// Connected again, the grant ends when the session does.
	v.connect(s)
	if g.LiveGrants() != 1 {
		t.Fatalf("%d live grants", g.LiveGrants())
	}
	waitRevoked(t, g)
	if g.LiveGrants() != 0 {
		t.Error("the grant outlived its session")
	}
}

// TestDriveRevokedOnClose: a session closed by its page (Done or Cancel)
// ends its Google grant itself, since the page's own disconnect may come
// after it and find the session gone.
func TestDriveRevokedOnClose(t *testing.T) {
	e, g := newDriveEnv(t)
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	v.connect(s)
	if r, _ := v.do(http.MethodPost, s.url+"/close?how=done", nil); r.status != http.StatusNoContent {
		t.Fatalf("close: %s", r)
	}
	waitRevoked(t, g)
	if g.LiveGrants() != 0 {
		t.Error("the grant outlived its closed session")
	}
	r, _ := v.do(http.MethodPost, s.url+"/drive/disconnect", nil)
	wantError(t, r, http.StatusGone, "was closed")
}

func waitRevoked(t *testing.T, g *drivetest.Server) {
	t.Helper()
	select {
	case rv := <-g.Revocations():
		if !rv.Refresh {
			t.Error("the access token was revoked, want the refresh token (the whole grant)")
		}
	case <-time.After(jobDeadline):
		t.Fatal("nothing was revoked at Google")
	}
}

// TestDriveImportsCountAgainstThePendingBound: imports wait in the same
// bound as uploads.
func TestDriveImportsCountAgainstThePendingBound(t *testing.T) {
	gate := newGateEmbedder()
	e, g := newDriveEnv(t, withEmbedder(gate), withWorkers(1), func(o *envOptions) { o.cfg.SessionMaxPending = 1 })
	a := g.AddFile(drivetest.File{Name: "a.txt", MimeType: "text/plain", Content: []byte("anchors and chains")})
	b := g.AddFile(drivetest.File{Name: "b.txt", MimeType: "text/plain", Content: []byte("buoys and beacons")})
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	v.connect(s)

	gate.armed.Store(true)
	first := decodeAs[apiUpload](t, v.importFile(s, a.ID))
	gate.waitEntered(t)
	r := v.importFile(s, b.ID)
	wantError(t, r, http.StatusTooManyRequests, "waiting to be indexed")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	if n, _ := g.Downloads(b.ID); n != 0 {
		t.Error("a file over the pending bound was downloaded")
	}
	close(gate.release)
	e.waitJob(t, e.a.key, first.JobID)
	second := decodeAs[apiUpload](t, v.importFile(s, b.ID))
	e.waitJob(t, e.a.key, second.JobID)
}
