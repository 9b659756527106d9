package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"

	"github.com/docsift/docsift/drive"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/drivetest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIDriveResponsesMatchSchemas walks the Drive import as the page
// does, against a stand-in for Google, and checks every response against
// the documented schema of its operation and status.
func TestOpenAPIDriveResponsesMatchSchemas(t *testing.T) {
	const clientID, secret = "openapi.apps.googleusercontent.com", "openapi-secret"
	g := drivetest.New(t, clientID, secret)
	folder := g.AddFile(drivetest.File{Name: "Reports", MimeType: drivetest.FolderType})
	notes := g.AddFile(drivetest.File{Name: "notes.txt", MimeType: "text/plain", Content: []byte("The pier opens at eight.")})
	g.AddFile(drivetest.File{Name: "Plan", MimeType: drivetest.DocumentType, Exports: map[string][]byte{"application/pdf": testpdf.Pages([]string{"Plan."})}})
	photo := g.AddFile(drivetest.File{Name: "pier.gif", MimeType: "image/gif", Content: []byte("GIF89a")})

	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, _, err := st.CreateProject("openapi")
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1}, logger)
	if err := engine.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Shutdown(context.Background()) })
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	g.AllowRedirect(DriveRedirectURL(base))
	dc, err := drive.New(drive.Config{
		ClientID: clientID, ClientSecret: secret, RedirectURL: DriveRedirectURL(base),
		Endpoints: drive.Endpoints{AuthURL: g.AuthURL, TokenURL: g.TokenURL, RevokeURL: g.RevokeURL, APIURL: g.APIURL},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close(context.Background()) })
	ts.Config.Handler = New(Config{BaseURL: base, Drive: dc}, st, engine, search.New(engine, st, llm.NewExtractive(), nil, logger), logger).Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	_, token, err := st.CreateSession(store.Session{ProjectID: p.ID, OwnerID: p.ID, Services: []string{"google_drive"},
		SuccessURL: "https://example.com/done", CancelURL: "https://example.com/cancel"}, time.Hour, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}

	kdoc, err := openapi3.NewLoader().LoadFromData(openAPIDoc)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	noFollow := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := func(method, template, path string, body any, want int) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			raw, _ := json.Marshal(body)
			rd = strings.NewReader(string(raw))
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: status %d, want %d: %s", method, template, resp.StatusCode, want, data)
		}
		return checkDocumented(t, kdoc, method, template, resp, data)
	}

	auth := call("POST", "/s/{token}/drive/connect", "/s/"+token+"/drive/connect", nil, 200)
	consent, err := noFollow.Get(auth["auth_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	consent.Body.Close()
	callback := strings.TrimPrefix(consent.Header.Get("Location"), base)
	call("GET", "/oauth/google/callback", callback, nil, 303)
	call("GET", "/oauth/google/callback", callback, nil, 400) // used

	list := call("GET", "/s/{token}/drive/files", "/s/"+token+"/drive/files", nil, 200)
	if files, _ := list["files"].([]any); len(files) != 4 {
		t.Errorf("listing: %v", list)
	}
	call("GET", "/s/{token}/drive/files", "/s/"+token+"/drive/files?folder="+folder.ID, nil, 200)
	call("GET", "/s/{token}/drive/files", "/s/"+token+"/drive/files?folder=a'b", nil, 400)
	call("POST", "/s/{token}/drive/import", "/s/"+token+"/drive/import", map[string]string{"file_id": notes.ID}, 200)
	call("POST", "/s/{token}/drive/import", "/s/"+token+"/drive/import", map[string]string{"file_id": photo.ID}, 415)
	call("POST", "/s/{token}/drive/disconnect", "/s/"+token+"/drive/disconnect", nil, 200)
	call("GET", "/s/{token}/drive/files", "/s/"+token+"/drive/files", nil, 401)
}

// checkDocumented checks one response against the document: its status,
// its content type and, for JSON, its schema with no undocumented field.
// It returns the decoded JSON object, if any.
func checkDocumented(t *testing.T, kdoc *openapi3.T, method, template string, resp *http.Response, data []byte) map[string]any {
	t.Helper()
	op := kdoc.Paths.Value(template).GetOperation(method)
	if op == nil {
		t.Fatalf("%s %s is not documented", method, template)
	}
	rr := op.Responses.Status(resp.StatusCode)
	if rr == nil {
		t.Fatalf("%s %s: status %d is not documented", method, template, resp.StatusCode)
	}
	if len(data) == 0 {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	media := rr.Value.Content.Get(mt)
	if media == nil {
		t.Fatalf("%s %s: %d answered as %s, which is not documented", method, template, resp.StatusCode, mt)
	}
	if mt != "application/json" {
		return nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s %s: %v: %s", method, template, err, data)
	}
	at := method + " " + template + " " + strconv.Itoa(resp.StatusCode)
	if err := media.Schema.Value.VisitJSON(v); err != nil {
		t.Errorf("%s: the response does not match its documented schema: %v\n%s", at, err, data)
	}
	for _, field := range undocumentedFields(media.Schema.Value, v, "") {
		t.Errorf("%s: the response has field %s, which the document does not name", at, field)
	}
	m, _ := v.(map[string]any)
	return m
}
