package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, key := range []string{"", "dsk_not_a_key"} {
		r := e.get(t, "/healthz", key)
		got := decodeAs[map[string]string](t, r)
		if got["status"] != "ok" {
			t.Errorf("healthz with key %q: %s", key, r)
		}
	}
}

// HEAD is answered as GET without the body, for health checkers; a route
// without GET still refuses it.
func TestHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for path, key := range map[string]string{"/healthz": "", "/customers": e.a.key, "/openapi.json": ""} {
		r := e.do(t, http.MethodHead, path, key, "", nil)
		if get := e.get(t, path, key); r.status != http.StatusOK || r.header.Get("Content-Type") != get.header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q, want GET's 200 %q", path, r.status, r.header.Get("Content-Type"), get.header.Get("Content-Type"))
		}
	}
	if r := e.do(t, http.MethodHead, "/upload/text", e.a.key, "", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("HEAD /upload/text: %d, want 405", r.status)
	}
	// On the wire: the headers and nothing after them.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "HEAD /healthz HTTP/1.1\r\nHost: docsift\r\nConnection: close\r\n\r\n")
	raw, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	if head, body, _ := strings.Cut(string(raw), "\r\n\r\n"); !strings.HasPrefix(head, "HTTP/1.1 200") || body != "" {
		t.Errorf("HEAD /healthz on the wire: %q", raw)
	}
}

// A path escaped more than it had to be names what it decodes to.
func TestEscapedPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := e.uploadText(t, e.a.key, e.a.projectID, "escaped", "Notes on the escaped harbour.")
	escaped := strings.Replace(doc, "_", "%5F", 1)
	if got := decodeAs[apiDocument](t, e.get(t, "/documents/"+escaped, e.a.key)); got.DocumentID != doc {
		t.Errorf("GET /documents/%s: %+v", escaped, got)
	}
}

// Text sent as text is indexed whatever control characters it holds
// (a terminal's colours, a stray \x01), which too many of would make a
// file read as binary data.
func TestUploadTextWithControlCharacters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.uploadText(t, e.a.key, e.a.projectID, "log", "\x1b[31merror\x1b[0m the \x01 quartermaster \x02 counted \x03 apples")
	q := e.query(t, e.a.key, "/query/project", map[string]any{"project_id": e.a.projectID, "query": "quartermaster apples", "top_k": 1})
	if len(q.Chunks) != 1 || !strings.Contains(q.Chunks[0].Text, "quartermaster") || strings.ContainsAny(q.Chunks[0].Text, "\x01\x1b") {
		t.Errorf("query found %+v", q.Chunks)
	}
	wantError(t, e.postJSON(t, "/upload/text", e.a.key, map[string]any{"owner_id": e.a.projectID, "text": "\x01\x02 \x03"}), http.StatusBadRequest, "text is empty")
}

func TestCreateAndListCustomers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.a, e.b

	success := []struct{ name, send, want string }{
		{"plain", "Acme", "Acme"},
		{"trimmed", "  Globex Corp \t", "Globex Corp"},
		{"unicode", "Société Générale 株式会社", "Société Générale 株式会社"},
		{"200 characters", strings.Repeat("é", 200), strings.Repeat("é", 200)},
	}
	created := map[string]string{}
	for _, c := range success {
		t.Run("ok/"+c.name, func(t *testing.T) {
			r := e.postJSON(t, "/customer/create", a.key, map[string]any{"project_id": a.projectID, "name": c.send})
			got := decodeAs[map[string]any](t, r)
			id, _ := got["customer_id"].(string)
			if !strings.HasPrefix(id, store.PrefixCustomer) {
				t.Fatalf("customer_id %q lacks the %s prefix: %s", id, store.PrefixCustomer, r)
			}
			if got["name"] != c.want || got["project_id"] != a.projectID {
				t.Errorf("want name %q, project %s: %s", c.want, a.projectID, r)
			}
			if cus, err := e.store.Customer(id); err != nil || cus.ProjectID != a.projectID || cus.Name != c.want {
				t.Errorf("stored customer %+v, %v", cus, err)
			}
			created[id] = c.want
		})
	}

	t.Run("list", func(t *testing.T) {
		got := decodeAs[struct {
			Customers []struct {
				ID        string `json:"customer_id"`
				ProjectID string `json:"project_id"`
				Name      string `json:"name"`
			} `json:"customers"`
		}](t, e.get(t, "/customers", a.key))
		seen := map[string]bool{}
		for _, c := range got.Customers {
			seen[c.ID] = true
			if c.ProjectID != a.projectID {
				t.Errorf("project A's list holds customer %s of project %s", c.ID, c.ProjectID)
			}
		}
		for _, id := range append(a.customers, keys(created)...) {
			if !seen[id] {
				t.Errorf("customer %s missing from the list", id)
			}
		}
		if want := len(a.customers) + len(created); len(got.Customers) != want {
			t.Errorf("listed %d customers, want %d", len(got.Customers), want)
		}
		// A project with no customers lists an empty array, not null.
		p, key, err := e.store.CreateProject("empty")
		if err != nil {
			t.Fatal(err)
		}
		r := e.get(t, "/customers", key)
		if !bytes.Contains(r.body, []byte(`"customers":[]`)) {
			t.Errorf("project %s without customers: want an empty array: %s", p.ID, r)
		}
	})

	revoked := e.revokedKey(t, a)
	ok := func(name string) map[string]any { return map[string]any{"project_id": a.projectID, "name": name} }
	runBad(t, e, badCases{
		{name: "malformed JSON", body: `{"project_id": "` + a.projectID + `", "name": `, status: 400, want: []string{"not valid JSON: it ends before it is complete"}},
		{name: "not JSON", body: `notjson`, status: 400, want: []string{"not valid JSON: it goes wrong at byte 2"}},
		{name: "Latin-1 body", body: `{"project_id": "` + a.projectID + "\", \"name\": \"Caf\xe9\"}", status: 400, want: []string{"not UTF-8", fmt.Sprintf("byte %d (0xe9)", 31+len(a.projectID))}},
		{name: "Latin-1 body after a byte order mark", body: "\ufeff" + `{"project_id": "` + a.projectID + "\", \"name\": \"Caf\xe9\"}", status: 400, want: []string{fmt.Sprintf("byte %d (0xe9)", 34+len(a.projectID))}},
		{name: "empty body", body: ``, status: 400, want: []string{"empty"}},
		{name: "array body", body: `[]`, status: 400, want: []string{"JSON object"}},
		{name: "two objects", body: `{"name":"x"} {"name":"y"}`, status: 400, want: []string{"one JSON object"}},
		{name: "name is a number", body: `{"project_id": "` + a.projectID + `", "name": 3}`, status: 400, want: []string{"name", "string"}},
		{name: "project_id is a number", body: `{"project_id": 7, "name": "x"}`, status: 400, want: []string{"project_id", "string"}},
		{name: "missing name", body: map[string]any{"project_id": a.projectID}, status: 400, want: []string{"name"}},
		{name: "blank name", body: ok("  \t "), status: 400, want: []string{"name"}},
		{name: "name too long", body: ok(strings.Repeat("x", 201)), status: 400, want: []string{"name", "200"}},
		{name: "control character in name", body: ok("bad\x00name"), status: 400, want: []string{"name"}},
		{name: "missing project_id", body: map[string]any{"name": "x"}, status: 400, want: []string{"project_id"}},
		{name: "unknown field", body: map[string]any{"project_id": a.projectID, "nmae": "x"}, status: 400, want: []string{"unknown field", "nmae"}},
		{name: "project of another key", body: map[string]any{"project_id": b.projectID, "name": "x"}, status: 403, want: []string{"project_id"}},
		{name: "project that does not exist", body: map[string]any{"project_id": "prj_doesnotexist", "name": "x"}, status: 403, want: []string{"project_id"}},
		{name: "body over 1 MiB", body: ok(strings.Repeat("x", 1<<20)), status: 413},
		{name: "no key", key: "-", body: ok("x"), status: 401},
		{name: "revoked key", key: revoked, body: ok("x"), status: 401},
	}.defaults(a.key, "/customer/create"))

	runBad(t, e, badCases{
		{name: "list/limit 0", method: "GET", path: "/customers?limit=0", status: 400, want: []string{"limit", "1000"}},
		{name: "list/limit over 1000", method: "GET", path: "/customers?limit=1001", status: 400, want: []string{"limit", "1000"}},
		{name: "list/limit not a number", method: "GET", path: "/customers?limit=ten", status: 400, want: []string{"limit"}},
		{name: "list/cursor not a customer", method: "GET", path: "/customers?cursor=" + a.customers[0][len(store.PrefixCustomer):], status: 400, want: []string{"cursor", "next_cursor"}},
		{name: "list/cursor of a document", method: "GET", path: "/customers?cursor=doc_0000000000000000000000000", status: 400, want: []string{"cursor"}},
		{name: "list/find too long", method: "GET", path: "/customers?find=" + strings.Repeat("x", 201), status: 400, want: []string{"find", "200"}},
		{name: "list/find with a control character", method: "GET", path: "/customers?find=a%00b", status: 400, want: []string{"find", "control"}},
		// Go's parser would drop these pairs, and the list run without them.
		{name: "list/find with a bare percent sign", method: "GET", path: "/customers?find=50%", status: 400, want: []string{`"find=50%"`, "percent-encoding", "%25"}},
		{name: "list/limit with a broken escape", method: "GET", path: "/customers?find=x&limit=5%G1", status: 400, want: []string{`"limit=5%G1"`, "percent-encoding"}},
		{name: "list/semicolons", method: "GET", path: "/customers?find=x;limit=5", status: 400, want: []string{`"find=x;limit=5"`, "separated by &"}},
		// A parameter a route does not take is refused, as an unknown
		// field of a body is, not ignored.
		{name: "list/misspelt parameter", method: "GET", path: "/customers?limt=5", status: 400, want: []string{`unknown query parameter "limt": GET /customers takes limit, cursor, find`}},
		{name: "create/parameter of a route that takes none", path: "/customer/create?stream=true", body: ok("x"), status: 400, want: []string{`unknown query parameter "stream": POST /customer/create takes none`}},
		{name: "job/parameter", method: "GET", path: "/jobs/job_x?verbose=1", status: 400, want: []string{`unknown query parameter "verbose": GET /jobs/{job_id} takes none`}},
	}.defaults(a.key, ""))
}

// TestCustomerPages: GET /customers lists a project's customers oldest
// first, a page at a time, each page's next_cursor leading to the next,
// and none after the last; another project's customers are not listed.
func TestCustomerPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, key, err := e.store.CreateProject("many customers")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		c, err := e.store.CreateCustomer(p.ID, fmt.Sprint("customer ", i), store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, c.ID)
	}
	var got []string
	path := "/customers?limit=2"
	for pages := 1; ; pages++ {
		r := e.get(t, path, key)
		page := decodeAs[struct {
			Customers []struct {
				ID        string `json:"customer_id"`
				ProjectID string `json:"project_id"`
			} `json:"customers"`
			NextCursor *string `json:"next_cursor"`
		}](t, r)
		for _, c := range page.Customers {
			if c.ProjectID != p.ID {
				t.Fatalf("project %s lists customer %s of project %s", p.ID, c.ID, c.ProjectID)
			}
			got = append(got, c.ID)
		}
		if page.NextCursor == nil {
			if pages != 3 {
				t.Fatalf("%d pages of at most 2 for 5 customers", pages)
			}
			break
		}
		if len(page.Customers) != 2 || *page.NextCursor != page.Customers[1].ID || pages == 3 {
			t.Fatalf("page %d: %s", pages, r)
		}
		path = "/customers?limit=2&cursor=" + *page.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("customers in pages %v, want oldest first %v", got, want)
	}

	// find: the customers whose name or id holds it, case aside; another
	// project's, named alike, never.
	other, _, err := e.store.CreateProject("other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateCustomer(other.ID, "customer 3", store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	for find, want := range map[string][]string{
		"CUSTOMER%203":                       {want[3]},
		strings.ToUpper(want[1]):             {want[1]},
		"customer&limit=2&cursor=" + want[3]: {want[4]},
		"nobody":                             nil,
	} {
		page := decodeAs[struct {
			Customers []struct {
				ID string `json:"customer_id"`
			} `json:"customers"`
		}](t, e.get(t, "/customers?find="+find, key))
		var ids []string
		for _, c := range page.Customers {
			ids = append(ids, c.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("find=%s lists %v, want %v", find, ids, want)
		}
	}
}

type apiSession struct {
	URL       string    `json:"url"`
	SessionID string    `json:"session_id"`
	OwnerID   string    `json:"owner_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

func TestSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.a, e.b
	body := func(project, customer string, services ...string) map[string]any {
		m := map[string]any{
			"project_id": project, "services": services,
			"success_url": "https://example.com/done", "cancel_url": "http://localhost:3000/cancel?x=1",
		}
		if customer != "" {
			m["customer_id"] = customer
		}
		return m
	}

	success := []struct {
		name, path string
		body       map[string]any
		owner      string
	}{
		{"multi-tenant all", "/session/multi-tenant", body(a.projectID, a.customers[0], "all"), a.customers[0]},
		{"multi-tenant file_upload and google_drive", "/session/multi-tenant", body(a.projectID, a.customers[1], "file_upload", "google_drive"), a.customers[1]},
		{"single-tenant file_upload", "/session/single-tenant", body(a.projectID, "", "file_upload"), a.projectID},
		{"single-tenant all", "/session/single-tenant", body(a.projectID, "", "all"), a.projectID},
	}
	var tokens []string
	for _, c := range success {
		t.Run("ok/"+c.name, func(t *testing.T) {
			r := e.postJSON(t, c.path, a.key, c.body)
			got := decodeAs[apiSession](t, r)
			token, ok := strings.CutPrefix(got.URL, e.base+"/s/")
			if !ok || token == "" || strings.Contains(token, "/") {
				t.Fatalf("url %q is not %s/s/{token}", got.URL, e.base)
			}
			// 128 random bits are 26 base32 characters.
			if len(token) < 26 {
				t.Errorf("token %q is shorter than 128 bits", token)
			}
			if got.OwnerID != c.owner {
				t.Errorf("owner_id %q, want %q", got.OwnerID, c.owner)
			}
			sess, err := e.store.SessionByToken(token)
			if err != nil {
				t.Fatalf("session of the returned token is not stored: %v", err)
			}
			if sess.OwnerID != c.owner || sess.ProjectID != a.projectID || sess.SuccessURL != "https://example.com/done" {
				t.Errorf("stored session %+v", sess)
			}
			if ttl := sess.ExpiresAt.Sub(sess.CreatedAt); ttl != server.DefaultSessionTTL {
				t.Errorf("session valid for %s, want %s", ttl, server.DefaultSessionTTL)
			}
			page := e.get(t, "/s/"+token, "")
			if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
				t.Errorf("session page: want 200 HTML: %s (Content-Type %q)", page, page.header.Get("Content-Type"))
			}
			tokens = append(tokens, token)
		})
	}

	t.Run("unknown token", func(t *testing.T) {
		r := e.get(t, "/s/"+strings.Repeat("a", 52), "")
		if r.status != http.StatusNotFound {
			t.Errorf("want 404: %s", r)
		}
	})

	revoked := e.revokedKey(t, a)
	for _, path := range []string{"/session/multi-tenant", "/session/single-tenant"} {
		customer := ""
		if path == "/session/multi-tenant" {
			customer = a.customers[0]
		}
		with := func(field string, v any) map[string]any {
			m := body(a.projectID, customer, "all")
			if v == nil {
				delete(m, field)
			} else {
				m[field] = v
			}
			return m
		}
		cases := badCases{
			{name: "malformed JSON", body: `{"project_id":`, status: 400, want: []string{"JSON"}},
			{name: "project of another key", body: with("project_id", b.projectID), status: 403, want: []string{"project_id"}},
			{name: "missing project_id", body: with("project_id", nil), status: 400, want: []string{"project_id"}},
			{name: "project_id is a number", body: with("project_id", 1), status: 400, want: []string{"project_id"}},
			{name: "services missing", body: with("services", nil), status: 400, want: []string{"services"}},
			{name: "services empty", body: with("services", []string{}), status: 400, want: []string{"services"}},
			{name: "services is a string", body: with("services", "all"), status: 400, want: []string{"services"}},
			{name: "services with a number", body: with("services", []any{"all", 5}), status: 400, want: []string{"field services[1] must be a string, not a number"}},
			{name: "services with an unknown value", body: with("services", []string{"all", "dropbox"}), status: 400, want: []string{`services holds unknown service "dropbox": allowed are "all", "file_upload", "google_drive"`}},
			{name: "success_url too long", body: with("success_url", "https://app.example/"+strings.Repeat("x", 2100)), status: 400, want: []string{"success_url is 2120 bytes, over the limit of 2048"}},
			{name: "services google_drive only", body: with("services", []string{"google_drive"}), status: 400, want: []string{"services", "Google Drive"}},
			{name: "success_url missing", body: with("success_url", nil), status: 400, want: []string{"success_url"}},
			{name: "success_url javascript", body: with("success_url", "javascript:alert(1)"), status: 400, want: []string{"success_url"}},
			{name: "success_url relative", body: with("success_url", "/done"), status: 400, want: []string{"success_url"}},
			{name: "success_url ftp", body: with("success_url", "ftp://example.com/done"), status: 400, want: []string{"success_url"}},
			{name: "success_url without host", body: with("success_url", "https://"), status: 400, want: []string{"success_url"}},
			{name: "cancel_url data", body: with("cancel_url", "data:text/html,<script>alert(1)</script>"), status: 400, want: []string{"cancel_url"}},
			{name: "cancel_url relative", body: with("cancel_url", "cancel.html"), status: 400, want: []string{"cancel_url"}},
			{name: "cancel_url missing", body: with("cancel_url", nil), status: 400, want: []string{"cancel_url"}},
			{name: "unknown field", body: with("sucess_url", "https://example.com"), status: 400, want: []string{"unknown field", "sucess_url"}},
			{name: "no key", key: "-", body: with("project_id", a.projectID), status: 401},
			{name: "invalid key", key: "dsk_notakey", body: with("project_id", a.projectID), status: 401},
			{name: "revoked key", key: revoked, body: with("project_id", a.projectID), status: 401},
		}
		if customer != "" {
			cases = append(cases,
				badCase{name: "customer_id missing", body: with("customer_id", nil), status: 400, want: []string{"customer_id"}},
				badCase{name: "customer of another project", body: with("customer_id", b.customers[0]), status: 404, want: []string{"customer"}},
				badCase{name: "customer that does not exist", body: with("customer_id", "cus_doesnotexist"), status: 404, want: []string{"customer"}},
			)
		} else {
			cases = append(cases,
				badCase{name: "customer_id given", body: with("customer_id", a.customers[0]), status: 400, want: []string{"customer_id"}},
			)
		}
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) { runBad(t, e, cases.defaults(a.key, path)) })
	}

	t.Run("secrets are neither stored nor logged", func(t *testing.T) {
		db, err := os.ReadFile(filepath.Join(e.dir, "docsift.db"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(db, []byte(a.projectID)) {
			t.Fatal("the database file does not hold project A: the check below would prove nothing")
		}
		logs := e.logs.String()
		for _, secret := range append([]string{a.key, b.key}, tokens...) {
			if bytes.Contains(db, []byte(secret)) {
				t.Errorf("the database holds the secret %.12s… in clear", secret)
			}
			if strings.Contains(logs, secret) {
				t.Errorf("the log holds the secret %.12s…", secret)
			}
		}
	})

	t.Run("expired", func(t *testing.T) {
		if len(tokens) == 0 {
			t.Fatal("no session was created")
		}
		e.clock.Advance(server.DefaultSessionTTL - time.Minute)
		if r := e.get(t, "/s/"+tokens[0], ""); r.status != http.StatusOK {
			t.Errorf("a minute before expiry: want 200: %s", r)
		}
		e.clock.Advance(time.Minute)
		for _, token := range tokens {
			r := e.get(t, "/s/"+token, "")
			if r.status != http.StatusGone || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				t.Errorf("expired session: want 410 HTML: %s", r)
			}
		}
	})
}

func TestUploadText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.a, e.b
	success := []struct {
		name     string
		body     map[string]any
		owner    string
		wantName string
	}{
		{"project owner", map[string]any{"owner_id": a.projectID, "text": "Project level notes about the harbour."}, a.projectID, "text"},
		{"customer owner with name and metadata", map[string]any{
			"owner_id": a.customers[0], "text": "Customer notes about lighthouses.", "name": "lighthouses.txt",
			"metadata": map[string]string{"source": "https://example.com/l", "dept": "ops"},
		}, a.customers[0], "lighthouses.txt"},
		{"text at the limit", map[string]any{"owner_id": a.customers[1], "text": strings.Repeat("word ", testMaxTextBytes/5)}, a.customers[1], "text"},
		{"a blank name", map[string]any{"owner_id": a.projectID, "text": "Notes on buoys.", "name": " \t "}, a.projectID, "text"},
	}
	for _, c := range success {
		t.Run("ok/"+c.name, func(t *testing.T) {
			up := decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", a.key, c.body))
			if up.Status != store.StatusPending || !strings.HasPrefix(up.JobID, store.PrefixJob) || !strings.HasPrefix(up.DocumentID, store.PrefixDocument) {
				t.Fatalf("upload answered %+v, want PENDING with job_ and doc_ ids", up)
			}
			j := e.waitJob(t, a.key, up.JobID)
			if j.Status != store.StatusSucceeded || j.Chunks < 1 || j.DocumentID != up.DocumentID || j.OwnerID != c.owner {
				t.Fatalf("job ended %+v", j)
			}
			d := decodeAs[apiDocument](t, e.get(t, "/documents/"+up.DocumentID, a.key))
			if d.OwnerID != c.owner || d.Name != c.wantName || d.Status != store.StatusSucceeded || d.Chunks != j.Chunks || d.Format != "text" {
				t.Errorf("document %+v", d)
			}
			if md, ok := c.body["metadata"].(map[string]string); ok && fmt.Sprint(d.Metadata) != fmt.Sprint(md) {
				t.Errorf("metadata %v, want %v", d.Metadata, md)
			}
		})
	}

	revoked := e.revokedKey(t, a)
	text := func(owner, text string) map[string]any { return map[string]any{"owner_id": owner, "text": text} }
	runBad(t, e, badCases{
		{name: "malformed JSON", body: `{"owner_id": "x", "text": "abc`, status: 400, want: []string{"JSON"}},
		{name: "text missing", body: map[string]any{"owner_id": a.projectID}, status: 400, want: []string{"text"}},
		{name: "text empty", body: text(a.projectID, ""), status: 400, want: []string{"text", "empty"}},
		{name: "text with NUL characters", body: text(a.projectID, "looks like text\x00\x01\x02 but is not"), status: 400, want: []string{"text contains NUL"}},
		{name: "text blank", body: text(a.projectID, " \n\t "), status: 400, want: []string{"text", "empty"}},
		{name: "text is a number", body: map[string]any{"owner_id": a.projectID, "text": 5}, status: 400, want: []string{"text", "string"}},
		{name: "owner_id missing", body: map[string]any{"text": "hello"}, status: 400, want: []string{"owner_id"}},
		{name: "owner_id is a number", body: map[string]any{"owner_id": 5, "text": "hello"}, status: 400, want: []string{"owner_id"}},
		{name: "owner_id not an id", body: text("someone", "hello"), status: 400, want: []string{"owner_id"}},
		{name: "unknown customer", body: text("cus_doesnotexist", "hello"), status: 404, want: []string{"cus_doesnotexist"}},
		{name: "customer of another project", body: text(b.customers[0], "hello"), status: 404},
		{name: "project of another key", body: text(b.projectID, "hello"), status: 403, want: []string{"owner_id " + b.projectID + " is not the project of this API key"}},
		{name: "name is a number", body: map[string]any{"owner_id": a.projectID, "text": "x", "name": 3}, status: 400, want: []string{"name"}},
		{name: "name too long", body: map[string]any{"owner_id": a.projectID, "text": "x", "name": strings.Repeat("n", 201)}, status: 400, want: []string{"name"}},
		{name: "metadata value not a string", body: map[string]any{"owner_id": a.projectID, "text": "x", "metadata": map[string]any{"ok": "a", "n": 1}}, status: 400, want: []string{"field metadata.n must be a string, not a number"}},
		{name: "metadata naming an upload session", body: map[string]any{"owner_id": a.projectID, "text": "x", "metadata": map[string]any{"session_id": "ses_x"}}, status: 400, want: []string{"metadata.session_id is set by docsift"}},
		{name: "metadata value a boolean", body: map[string]any{"owner_id": a.projectID, "text": "x", "metadata": map[string]any{"flag": true}}, status: 400, want: []string{"field metadata.flag must be a string, not true or false"}},
		{name: "metadata not an object", body: map[string]any{"owner_id": a.projectID, "text": "x", "metadata": "dept=ops"}, status: 400, want: []string{"field metadata must be an object, not a string"}},
		{name: "metadata empty key", body: map[string]any{"owner_id": a.projectID, "text": "x", "metadata": map[string]any{"": "v"}}, status: 400, want: []string{"metadata"}},
		{name: "unknown field", body: map[string]any{"owner_id": a.projectID, "text": "x", "txt": "y"}, status: 400, want: []string{"unknown field", "txt"}},
		{name: "text one byte over the limit", body: text(a.projectID, strings.Repeat("x", testMaxTextBytes+1)), status: 413},
		{name: "body far over the limit", body: text(a.projectID, strings.Repeat("x", 64*testMaxTextBytes)), status: 413},
		{name: "no key", key: "-", body: text(a.projectID, "hello"), status: 401},
		{name: "revoked key", key: revoked, body: text(a.projectID, "hello"), status: 401},
	}.defaults(a.key, "/upload/text"))
}

// gifBytes is an empty 1×1 GIF: header, screen descriptor and trailer.
// GIF is refused (only PNG, JPEG and TIFF images are read with OCR).
var gifBytes = []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")

// binaryBytes is reproducible noise, the kind of file nobody can index.
func binaryBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func TestUploadFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.a, e.b
	markdown := []byte("# Harbour guide\n\n## Moorings\n\n- Berth **7** is reserved for the *pilot boat*.\n- Berths 8 to 12 are for visitors.\n\nSee [the map](https://example.com/map).\n")
	plain := []byte("The ferry to the island leaves at nine. Tickets are sold at the kiosk by the pier.\n")
	success := []struct {
		name       string
		parts      []part
		owner      string
		wantName   string
		wantFormat string
	}{
		{"plain text", []part{filePart("ferry.txt", plain), dataPart(map[string]any{"owner_id": a.projectID})}, a.projectID, "ferry.txt", "text"},
		{"markdown, data part first", []part{dataPart(map[string]any{"owner_id": a.customers[0]}), filePart("guide.md", markdown)}, a.customers[0], "guide.md", "markdown"},
		{"name and metadata from the data part", []part{filePart("x.txt", plain), dataPart(map[string]any{"owner_id": a.customers[1], "name": "Ferry times", "metadata": map[string]string{"lang": "en"}})}, a.customers[1], "Ferry times", "text"},
		{"type by content, not by name", []part{filePart("photo.png", markdown), dataPart(map[string]any{"owner_id": a.projectID})}, a.projectID, "photo.png", "markdown"},
		{"file at the limit", []part{filePart("big.txt", bytes.Repeat([]byte("pier "), testMaxFileBytes/5)), dataPart(map[string]any{"owner_id": a.projectID})}, a.projectID, "big.txt", "text"},
		{"a blank name is the file's", []part{filePart("ferry.txt", plain), dataPart(map[string]any{"owner_id": a.projectID, "name": "   "})}, a.projectID, "ferry.txt", "text"},
		{"a long file name truncated", []part{filePart(strings.Repeat("é", 250)+".txt", plain), dataPart(map[string]any{"owner_id": a.projectID})}, a.projectID, strings.Repeat("é", 200), "text"},
	}
	for _, c := range success {
		t.Run("ok/"+c.name, func(t *testing.T) {
			up := decodeAs[apiUpload](t, e.uploadFile(t, a.key, c.parts...))
			if up.Status != store.StatusPending || up.JobID == "" || up.DocumentID == "" {
				t.Fatalf("upload answered %+v", up)
			}
			if j := e.waitJob(t, a.key, up.JobID); j.Status != store.StatusSucceeded {
				t.Fatalf("job ended %+v", j)
			}
			d := decodeAs[apiDocument](t, e.get(t, "/documents/"+up.DocumentID, a.key))
			if d.OwnerID != c.owner || d.Name != c.wantName || d.Format != c.wantFormat {
				t.Errorf("document %+v, want owner %s, name %q, format %s", d, c.owner, c.wantName, c.wantFormat)
			}
		})
	}
	t.Run("ok/markdown is searchable", func(t *testing.T) {
		q := e.query(t, a.key, "/query/customer", map[string]any{"customer_id": a.customers[0], "query": "which berth is reserved for the pilot boat?"})
		if len(q.Chunks) == 0 || !strings.Contains(q.Chunks[0].Text, "pilot boat") {
			t.Errorf("the Markdown upload is not found: %+v", q)
		}
	})

	owner := func(id string) part { return dataPart(map[string]any{"owner_id": id}) }
	txt := filePart("notes.txt", plain)
	revoked := e.revokedKey(t, a)
	cases := []struct {
		name        string
		key         string
		contentType string // instead of the multipart one
		truncate    bool   // drop the closing boundary and the data part's end
		parts       []part
		status      int
		want        []string
	}{
		{name: "not multipart", contentType: "application/json", parts: []part{txt, owner(a.projectID)}, status: 415, want: []string{"multipart"}},
		{name: "multipart without boundary", contentType: "multipart/form-data", parts: []part{txt, owner(a.projectID)}, status: 415, want: []string{"multipart"}},
		{name: "multipart cut short", truncate: true, parts: []part{txt, owner(a.projectID)}, status: 400, want: []string{"multipart"}},
		{name: "file part missing", parts: []part{owner(a.projectID)}, status: 400, want: []string{"file"}},
		{name: "data part missing", parts: []part{txt}, status: 400, want: []string{"data"}},
		{name: "data part not JSON", parts: []part{txt, dataPart("owner_id=" + a.projectID)}, status: 400, want: []string{"data"}},
		{name: "data part in Latin-1", parts: []part{txt, dataPart(`{"owner_id": "` + a.projectID + "\", \"name\": \"Caf\xe9\"}")}, status: 400, want: []string{"data part: not UTF-8"}},
		{name: "data part unknown field", parts: []part{txt, dataPart(map[string]any{"owner_id": a.projectID, "owner": "x"})}, status: 400, want: []string{"unknown field", "owner"}},
		{name: "data part with text", parts: []part{txt, dataPart(map[string]any{"owner_id": a.projectID, "text": "x"})}, status: 400, want: []string{"text"}},
		{name: "data part owner_id missing", parts: []part{txt, dataPart(map[string]any{"name": "x"})}, status: 400, want: []string{"owner_id"}},
		{name: "data part owner_id is a number", parts: []part{txt, dataPart(`{"owner_id": 12}`)}, status: 400, want: []string{"owner_id"}},
		{name: "unknown customer", parts: []part{txt, owner("cus_doesnotexist")}, status: 404},
		{name: "customer of another project", parts: []part{txt, owner(b.customers[0])}, status: 404},
		{name: "project of another key", parts: []part{txt, owner(b.projectID)}, status: 403, want: []string{"owner_id " + b.projectID + " is not"}},
		{name: "empty file", parts: []part{filePart("empty.txt", nil), owner(a.projectID)}, status: 400, want: []string{"empty"}},
		{name: "GIF image", parts: []part{filePart("notes.txt", gifBytes), owner(a.projectID)}, status: 415, want: []string{"GIF", "PNG, JPEG and TIFF"}},
		{name: "random binary", parts: []part{filePart("notes.md", binaryBytes(2048)), owner(a.projectID)}, status: 415, want: []string{"unsupported"}},
		{name: "executable", parts: []part{filePart("run", append([]byte("\x7fELF"), make([]byte, 100)...)), owner(a.projectID)}, status: 415},
		// A damaged ZIP is the uploader's fault, not a server bug.
		{name: "damaged zip", parts: []part{filePart("report.docx", []byte("PK\x03\x04 this is not really a zip archive")), owner(a.projectID)}, status: 400, want: []string{"damaged"}},
		{name: "file one byte over the limit", parts: []part{filePart("big.txt", bytes.Repeat([]byte("x"), testMaxFileBytes+1)), owner(a.projectID)}, status: 413},
		{name: "two file parts", parts: []part{txt, txt, owner(a.projectID)}, status: 400, want: []string{"file"}},
		{name: "two data parts", parts: []part{txt, owner(a.customers[0]), owner(a.customers[1])}, status: 400, want: []string{"more than one data part"}},
		{name: "metadata naming an upload session", parts: []part{txt, dataPart(map[string]any{"owner_id": a.projectID, "metadata": map[string]string{"session_id": "ses_x"}})}, status: 400, want: []string{"metadata.session_id is set by docsift"}},
		{name: "unknown part", parts: []part{txt, owner(a.projectID), {name: "extra", content: []byte("x")}}, status: 400, want: []string{"extra"}},
		{name: "no key", key: "-", parts: []part{txt, owner(a.projectID)}, status: 401},
		{name: "revoked key", key: revoked, parts: []part{txt, owner(a.projectID)}, status: 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := c.key
			switch key {
			case "":
				key = a.key
			case "-":
				key = ""
			}
			e.unchanged(t, func() {
				body, ct := multipartBody(t, c.parts...)
				if c.contentType != "" {
					ct = c.contentType
				}
				if c.truncate {
					body = body[:len(body)-20]
				}
				wantError(t, e.do(t, http.MethodPost, "/upload/file", key, ct, bytes.NewReader(body)), c.status, c.want...)
			})
		})
	}
}

func TestQuery(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	a, b := s.a, s.b
	cus := a.customers[0]
	word := s.wordOf[cus]

	success := []struct {
		name     string
		path     string
		body     map[string]any
		wantDoc  string
		maxItems int
	}{
		{"customer", "/query/customer", map[string]any{"customer_id": cus, "query": "what does the codeword " + word + " unlock?", "top_k": 5}, s.docA1, 5},
		{"customer, top_k default", "/query/customer", map[string]any{"customer_id": cus, "query": word}, s.docA1, 5},
		{"customer, top_k 2.0", "/query/customer", map[string]any{"customer_id": cus, "query": word, "top_k": 2.0}, s.docA1, 2},
		{"customer, top_k 50", "/query/customer", map[string]any{"customer_id": cus, "query": word, "top_k": 50}, s.docA1, 50},
		{"customer, query of 4000 characters", "/query/customer", map[string]any{"customer_id": cus, "query": word + " " + strings.Repeat("é", 4000-len(word)-1)}, s.docA1, 5},
		{"project", "/query/project", map[string]any{"project_id": a.projectID, "query": "codeword " + s.wordOf[a.projectID], "top_k": 1}, s.docA, 1},
	}
	for _, c := range success {
		t.Run("ok/"+c.name, func(t *testing.T) {
			r := s.postJSON(t, c.path, a.key, c.body)
			q := decodeAs[apiQuery](t, r)
			if len(q.Chunks) == 0 || len(q.Chunks) > c.maxItems {
				t.Fatalf("want 1 to %d chunks: %s", c.maxItems, r)
			}
			if q.Chunks[0].DocumentID != c.wantDoc {
				t.Errorf("top chunk from %s, want %s", q.Chunks[0].DocumentID, c.wantDoc)
			}
			if q.AnswerModel != llm.ExtractiveModel || q.Answer == "" {
				t.Errorf("answer %q by %q", q.Answer, q.AnswerModel)
			}
			for _, ch := range q.Chunks {
				if !strings.HasPrefix(ch.ChunkID, store.PrefixChunk) || ch.Text == "" || ch.DocumentName == "" || ch.Page != nil {
					t.Errorf("chunk %+v", ch)
				}
			}
		})
	}

	t.Run("ok/a byte order mark before the JSON", func(t *testing.T) {
		body := "\ufeff" + string(jsonBytes(map[string]any{"project_id": a.projectID, "query": word}))
		decodeAs[apiQuery](t, s.postJSON(t, "/query/project", a.key, body))
	})

	t.Run("ok/owner with no documents", func(t *testing.T) {
		c, err := s.store.CreateCustomer(a.projectID, "new", store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		r := s.postJSON(t, "/query/customer", a.key, map[string]any{"customer_id": c.ID, "query": word})
		q := decodeAs[apiQuery](t, r)
		if len(q.Chunks) != 0 || !bytes.Contains(r.body, []byte(`"chunks":[]`)) {
			t.Errorf("want an empty chunks array: %s", r)
		}
	})

	revoked := s.revokedKey(t, a)
	long := strings.Repeat("a", 4001)
	longRunes := strings.Repeat("ü", 4001)
	for _, ep := range []struct {
		path, field, own string
	}{
		{"/query/customer", "customer_id", cus},
		{"/query/project", "project_id", a.projectID},
	} {
		q := func(kv ...any) map[string]any {
			m := map[string]any{ep.field: ep.own, "query": word}
			for i := 0; i < len(kv); i += 2 {
				if kv[i+1] == nil {
					delete(m, kv[i].(string))
				} else {
					m[kv[i].(string)] = kv[i+1]
				}
			}
			return m
		}
		raw := func(extra string) string {
			return fmt.Sprintf(`{%q: %q, "query": %q, %s}`, ep.field, ep.own, word, extra)
		}
		cases := badCases{
			{name: "malformed JSON", body: `{"query": "x"`, status: 400, want: []string{"JSON"}},
			{name: "query missing", body: q("query", nil), status: 400, want: []string{"query"}},
			{name: "query empty", body: q("query", ""), status: 400, want: []string{"query"}},
			{name: "query blank", body: q("query", "   "), status: 400, want: []string{"query"}},
			{name: "query is a number", body: q("query", 42), status: 400, want: []string{"query"}},
			{name: "query over 4000 characters", body: q("query", long), status: 400, want: []string{"query", "4000"}},
			{name: "query over 4000 multibyte characters", body: q("query", longRunes), status: 400, want: []string{"query", "4000"}},
			{name: "query of zero-width characters", body: q("query", "\u200b\u200d\ufeff"), status: 400, want: []string{"query is empty"}},
			{name: "query of punctuation", body: q("query", "?!"), status: 400, want: []string{"query has no letters or digits"}},
			{name: "top_k a string", body: raw(`"top_k": "5"`), status: 400, want: []string{"field top_k must be a number, not a string"}},
			{name: "top_k true", body: raw(`"top_k": true`), status: 400, want: []string{"top_k"}},
			{name: "top_k 0", body: raw(`"top_k": 0`), status: 400, want: []string{"top_k"}},
			{name: "top_k -1", body: raw(`"top_k": -1`), status: 400, want: []string{"top_k"}},
			{name: "top_k 51", body: raw(`"top_k": 51`), status: 400, want: []string{"top_k"}},
			{name: "top_k 2.5", body: raw(`"top_k": 2.5`), status: 400, want: []string{"top_k"}},
			{name: "top_k 1e400", body: raw(`"top_k": 1e400`), status: 400, want: []string{"field top_k: 1e400 is out of range"}},
			{name: "top_k 1e6", body: raw(`"top_k": 1e6`), status: 400, want: []string{"top_k must be a whole number from 1 to 50, got 1000000"}},
			{name: "unknown field", body: q("k", 5), status: 400, want: []string{"unknown field", `"k"`}},
			{name: ep.field + " missing", body: q(ep.field, nil), status: 400, want: []string{ep.field}},
			{name: ep.field + " is a number", body: q(ep.field, 9), status: 400, want: []string{ep.field}},
			{name: "no key", key: "-", body: q(), status: 401},
			{name: "invalid key", key: "dsk_invalid", body: q(), status: 401},
			{name: "revoked key", key: revoked, body: q(), status: 401},
		}
		if ep.field == "customer_id" {
			cases = append(cases,
				badCase{name: "unknown customer", body: q(ep.field, "cus_doesnotexist"), status: 404, want: []string{"cus_doesnotexist"}},
				badCase{name: "customer of another project", body: q(ep.field, b.customers[0]), status: 404},
				badCase{name: "project id as customer_id", body: q(ep.field, a.projectID), status: 404},
			)
		} else {
			cases = append(cases,
				badCase{name: "project of another key", body: q(ep.field, b.projectID), status: 403, want: []string{"project_id"}},
				badCase{name: "customer id as project_id", body: q(ep.field, cus), status: 400, want: []string{"project_id", "is not a project id"}},
				badCase{name: "project_id with a space", body: q(ep.field, " "+a.projectID), status: 400, want: []string{"project_id", "is not a project id"}},
			)
		}
		t.Run(strings.TrimPrefix(ep.path, "/"), func(t *testing.T) { runBad(t, s.env, cases.defaults(a.key, ep.path)) })
	}
}

func TestJobsAndDocuments(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	a := s.a

	t.Run("ok/job", func(t *testing.T) {
		d := decodeAs[apiDocument](t, s.get(t, "/documents/"+s.docA1, a.key))
		r := s.get(t, "/jobs/"+d.JobID, a.key)
		var j map[string]any
		if err := json.Unmarshal(r.body, &j); err != nil || r.status != 200 {
			t.Fatalf("GET job: %s", r)
		}
		for _, f := range []string{"job_id", "status", "owner_id", "document_id", "chunks", "chunks_embedded", "created_at", "updated_at"} {
			if _, ok := j[f]; !ok {
				t.Errorf("job lacks %s: %s", f, r)
			}
		}
		if n, _ := j["chunks"].(float64); n == 0 || j["chunks_embedded"] != j["chunks"] {
			t.Errorf("a SUCCEEDED job must show every chunk embedded: %s", r)
		}
		if j["job_id"] != d.JobID || j["status"] != store.StatusSucceeded || j["owner_id"] != a.customers[0] || j["document_id"] != s.docA1 {
			t.Errorf("job %s", r)
		}
		if _, ok := j["project_id"]; ok {
			t.Errorf("job shows internal fields: %s", r)
		}
	})

	t.Run("ok/list", func(t *testing.T) {
		for owner, want := range map[string]string{a.projectID: s.docA, a.customers[0]: s.docA1, a.customers[1]: s.docA2} {
			got := decodeAs[struct {
				Documents []apiDocument `json:"documents"`
			}](t, s.get(t, "/documents?owner_id="+url.QueryEscape(owner), a.key))
			if len(got.Documents) != 1 || got.Documents[0].DocumentID != want || got.Documents[0].OwnerID != owner {
				t.Errorf("documents of %s: %+v, want only %s", owner, got.Documents, want)
			}
		}
		c, err := s.store.CreateCustomer(a.projectID, "none yet", store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if r := s.get(t, "/documents?owner_id="+c.ID, a.key); r.status != 200 || !bytes.Contains(r.body, []byte(`"documents":[]`)) {
			t.Errorf("owner without documents: want an empty array: %s", r)
		}
	})

	t.Run("ok/list in pages", func(t *testing.T) {
		c, err := s.store.CreateCustomer(a.projectID, "five documents", store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		var want []string // newest first
		for i := range 5 {
			d := &store.Document{ProjectID: a.projectID, OwnerID: c.ID, Name: fmt.Sprintf("%d.txt", i), Format: "text"}
			if _, err := s.store.CreateDocument(d, store.Bytes([]byte("words")), store.ProjectLimits{}); err != nil {
				t.Fatal(err)
			}
			want = append([]string{d.ID}, want...)
		}
		var got []string
		path := "/documents?limit=2&owner_id=" + c.ID
		for pages := 1; ; pages++ {
			r := s.get(t, path, a.key)
			page := decodeAs[struct {
				Documents  []apiDocument `json:"documents"`
				NextCursor *string       `json:"next_cursor"`
			}](t, r)
			for _, d := range page.Documents {
				got = append(got, d.DocumentID)
			}
			if page.NextCursor == nil {
				if pages != 3 {
					t.Fatalf("%d pages of at most 2 for 5 documents", pages)
				}
				break
			}
			if len(page.Documents) != 2 || *page.NextCursor != page.Documents[1].DocumentID || pages == 3 {
				t.Fatalf("page %d: %s", pages, r)
			}
			path = "/documents?limit=2&owner_id=" + c.ID + "&cursor=" + *page.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("documents in pages %v, want newest first %v", got, want)
		}
	})

	t.Run("ok/get", func(t *testing.T) {
		r := s.get(t, "/documents/"+s.docA2, a.key)
		d := decodeAs[apiDocument](t, r)
		if d.DocumentID != s.docA2 || d.OwnerID != a.customers[1] || d.ProjectID != a.projectID || d.Status != store.StatusSucceeded || d.Chunks < 1 {
			t.Errorf("document %s", r)
		}
		if bytes.Contains(r.body, []byte("file_hash")) {
			t.Errorf("document shows its file hash: %s", r)
		}
	})

	revoked := s.revokedKey(t, a)
	runBad(t, s.env, badCases{
		{name: "job that does not exist", method: "GET", path: "/jobs/job_doesnotexist", status: 404, want: []string{"job_doesnotexist"}},
		{name: "document id as job id", method: "GET", path: "/jobs/" + s.docA, status: 404},
		{name: "job without key", method: "GET", path: "/jobs/" + s.jobB, key: "-", status: 401},
		{name: "list without owner_id", method: "GET", path: "/documents", status: 400, want: []string{"owner_id"}},
		{name: "list with empty owner_id", method: "GET", path: "/documents?owner_id=", status: 400, want: []string{"owner_id"}},
		{name: "list of an unknown customer", method: "GET", path: "/documents?owner_id=cus_doesnotexist", status: 404},
		{name: "list of a non-id", method: "GET", path: "/documents?owner_id=bob", status: 400, want: []string{"owner_id"}},
		{name: "list with revoked key", method: "GET", path: "/documents?owner_id=" + a.projectID, key: revoked, status: 401},
		{name: "list with limit 0", method: "GET", path: "/documents?limit=0&owner_id=" + a.projectID, status: 400, want: []string{"limit", "1 to 1000"}},
		{name: "list with limit over the most", method: "GET", path: "/documents?limit=1001&owner_id=" + a.projectID, status: 400, want: []string{"limit"}},
		{name: "list with a word as limit", method: "GET", path: "/documents?limit=all&owner_id=" + a.projectID, status: 400, want: []string{"limit"}},
		{name: "list from a made-up cursor", method: "GET", path: "/documents?cursor=page2&owner_id=" + a.projectID, status: 400, want: []string{"cursor", "next_cursor"}},
		{name: "list from an empty cursor", method: "GET", path: "/documents?cursor=&owner_id=" + a.projectID, status: 400, want: []string{"cursor"}},
		{name: "get a document that does not exist", method: "GET", path: "/documents/doc_doesnotexist", status: 404, want: []string{"doc_doesnotexist"}},
		{name: "get a customer id as document", method: "GET", path: "/documents/" + a.customers[0], status: 404},
		{name: "delete a document that does not exist", method: "DELETE", path: "/documents/doc_doesnotexist", status: 404},
		{name: "delete without key", method: "DELETE", path: "/documents/" + s.docA, key: "-", status: 401},
		{name: "delete with revoked key", method: "DELETE", path: "/documents/" + s.docA, key: revoked, status: 401},
	}.defaults(a.key, ""))

	t.Run("ok/delete", func(t *testing.T) {
		r := s.do(t, http.MethodDelete, "/documents/"+s.docA2, a.key, "", nil)
		got := decodeAs[map[string]any](t, r)
		if got["document_id"] != s.docA2 || got["deleted"] != true {
			t.Errorf("delete answered %s", r)
		}
		wantError(t, s.get(t, "/documents/"+s.docA2, a.key), 404)
		s.unchanged(t, func() {
			wantError(t, s.do(t, http.MethodDelete, "/documents/"+s.docA2, a.key, "", nil), 404)
		})
		if seqs, err := s.store.OwnerSeqs(a.customers[1]); err != nil || len(seqs) != 0 {
			t.Errorf("chunks left after delete: %v %v", seqs, err)
		}
	})
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.a
	runBad(t, e, badCases{
		{name: "unknown route without key", method: "GET", path: "/nope", key: "-", status: 404, want: []string{"/nope"}},
		{name: "unknown route with key", method: "GET", path: "/v1/query/customer", status: 404},
		{name: "unknown POST route without key", path: "/customer/delete", key: "-", body: `{}`, status: 404},
		{name: "trailing slash", path: "/customer/create/", body: `{}`, status: 404},
		{name: "GET on a POST route", method: "GET", path: "/customer/create", status: 405, want: []string{"GET"}},
		{name: "GET on a POST route without key", method: "GET", path: "/upload/text", key: "-", status: 405},
		{name: "DELETE on the document list", method: "DELETE", path: "/documents", status: 405},
		{name: "PUT on a document", method: "PUT", path: "/documents/doc_x", status: 405},
		{name: "POST on healthz", path: "/healthz", body: `{}`, status: 405},
		{name: "DELETE on a job", method: "DELETE", path: "/jobs/job_x", status: 405},
	}.defaults(a.key, ""))
}

// apiRoutes is every route behind the API key, with a body that would be
// accepted with a good key.
func apiRoutes(t *testing.T, s *seeded) []struct{ method, path, body string } {
	a := s.a
	return []struct{ method, path, body string }{
		{"POST", "/customer/create", fmt.Sprintf(`{"project_id": %q, "name": "x"}`, a.projectID)},
		{"GET", "/customers", ""},
		{"POST", "/session/multi-tenant", fmt.Sprintf(`{"project_id": %q, "customer_id": %q, "services": ["all"], "success_url": "https://e.com", "cancel_url": "https://e.com"}`, a.projectID, a.customers[0])},
		{"POST", "/session/single-tenant", fmt.Sprintf(`{"project_id": %q, "services": ["all"], "success_url": "https://e.com", "cancel_url": "https://e.com"}`, a.projectID)},
		{"POST", "/upload/text", fmt.Sprintf(`{"owner_id": %q, "text": "hello"}`, a.projectID)},
		{"POST", "/upload/file", ""},
		{"POST", "/query/customer", fmt.Sprintf(`{"customer_id": %q, "query": "hello"}`, a.customers[0])},
		{"POST", "/query/project", fmt.Sprintf(`{"project_id": %q, "query": "hello"}`, a.projectID)},
		{"GET", "/jobs/" + s.jobOf(t, s.docA), ""},
		{"GET", "/documents?owner_id=" + a.projectID, ""},
		{"GET", "/documents/" + s.docA, ""},
		{"DELETE", "/documents/" + s.docA, ""},
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	revoked := s.revokedKey(t, s.a)
	headers := []struct{ name, value string }{
		{"missing", ""},
		{"empty bearer", "Bearer "},
		{"basic scheme", "Basic " + s.a.key},
		{"no scheme", s.a.key},
		{"unknown key", "Bearer dsk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"key with a character changed", "Bearer " + s.a.key[:len(s.a.key)-1] + flip(s.a.key[len(s.a.key)-1])},
		{"revoked key", "Bearer " + revoked},
	}
	for _, rt := range apiRoutes(t, s) {
		for _, h := range headers {
			t.Run(rt.method+" "+rt.path+"/"+h.name, func(t *testing.T) {
				s.unchanged(t, func() {
					body, ct := []byte(rt.body), "application/json"
					if rt.path == "/upload/file" {
						body, ct = multipartBody(t, filePart("a.txt", []byte("hello")), dataPart(map[string]any{"owner_id": s.a.projectID}))
					}
					req, err := http.NewRequest(rt.method, s.base+rt.path, bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Content-Type", ct)
					if h.value != "" {
						req.Header.Set("Authorization", h.value)
					}
					resp, err := s.srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					r := response{req: rt.method + " " + rt.path, status: resp.StatusCode, header: resp.Header, body: b}
					wantError(t, r, http.StatusUnauthorized)
					if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
						t.Errorf("401 without a Bearer WWW-Authenticate challenge: %q", r.header.Get("WWW-Authenticate"))
					}
				})
			})
		}
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// lighthouseText is several chunks long; one sentence in the middle holds
// the answer to lighthouseQuery.
func lighthouseText() string {
	topics := []string{"tomato beds", "bicycle racks", "choir rehearsals", "parking permits", "library hours", "recycling bins"}
	var b strings.Builder
	for i := range 60 {
		t := topics[i%len(topics)]
		fmt.Fprintf(&b, "The committee reviewed the %s again in meeting %d and agreed to revisit them later. ", t, i+1)
		if i == 31 {
			b.WriteString("The lighthouse keeper's spare key is hidden under the blue ceramic pot beside the north door. ")
		}
	}
	return b.String()
}

const lighthouseQuery = "Where is the lighthouse keeper's spare key hidden?"

func TestUploadQueryDeleteEndToEnd(t *testing.T) {
	t.Parallel()
	gate := newGateEmbedder()
	e := newEnv(t, withWorkers(1), withEmbedder(gate), withMaxTextBytes(64<<10))
	a := e.a
	cus := a.customers[0]
	text := lighthouseText()

	gate.armed.Store(true)
	up := decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", a.key, map[string]any{"owner_id": cus, "text": text, "name": "keys.txt"}))
	if up.Status != store.StatusPending {
		t.Fatalf("upload status %q, want PENDING", up.Status)
	}
	gate.waitEntered(t)
	if j := decodeAs[apiJob](t, e.get(t, "/jobs/"+up.JobID, a.key)); j.Status != store.StatusProcessing {
		t.Errorf("job in the embedder is %s, want PROCESSING", j.Status)
	}
	// The only worker is busy, so a second upload waits its turn.
	other := decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", a.key, map[string]any{"owner_id": cus, "text": "The bakery opens at seven and sells rye bread.", "name": "bakery.txt"}))
	if j := decodeAs[apiJob](t, e.get(t, "/jobs/"+other.JobID, a.key)); j.Status != store.StatusPending {
		t.Errorf("queued job is %s, want PENDING", j.Status)
	}
	close(gate.release)
	j := e.waitJob(t, a.key, up.JobID)
	if j.Status != store.StatusSucceeded || j.Chunks < 3 {
		t.Fatalf("job ended %+v, want SUCCEEDED with several chunks", j)
	}
	if j := e.waitJob(t, a.key, other.JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("second job ended %+v", j)
	}
	if seqs, _ := e.store.OwnerSeqs(cus); len(seqs) != j.Chunks+1 {
		t.Errorf("the owner has %d chunks stored, want %d", len(seqs), j.Chunks+1)
	}

	ask := map[string]any{"customer_id": cus, "query": lighthouseQuery, "top_k": 3}
	r := e.postJSON(t, "/query/customer", a.key, ask)
	q := decodeAs[apiQuery](t, r)
	if len(q.Chunks) == 0 {
		t.Fatalf("no chunks: %s", r)
	}
	top := q.Chunks[0]
	if top.DocumentID != up.DocumentID || !strings.Contains(top.Text, "blue ceramic pot") || top.DocumentName != "keys.txt" {
		t.Errorf("top chunk is not the one with the answer: %+v", top)
	}
	if top.Page != nil || !bytes.Contains(r.body, []byte(`"page":null`)) {
		t.Errorf("page of a text chunk must be null: %s", r)
	}
	if q.AnswerModel != "extractive" || !strings.Contains(q.Answer, "[1]") || !strings.Contains(q.Answer, "blue ceramic pot") {
		t.Errorf("answer %q by %q: want the answer sentence citing [1] by extractive", q.Answer, q.AnswerModel)
	}

	if n := e.storedFiles(t, cus); n != 2 {
		t.Fatalf("%d original files stored for the owner, want 2", n)
	}
	del := e.do(t, http.MethodDelete, "/documents/"+up.DocumentID, a.key, "", nil)
	if del.status != http.StatusOK {
		t.Fatalf("delete: %s", del)
	}
	if n := e.storedFiles(t, cus); n != 1 {
		t.Errorf("%d original files left for the owner after the delete, want 1", n)
	}
	q = e.query(t, a.key, "/query/customer", ask)
	if q.documents()[up.DocumentID] {
		t.Errorf("the deleted document is still returned: %+v", q.Chunks)
	}
	if strings.Contains(q.Answer, "ceramic pot") {
		t.Errorf("the answer still quotes the deleted document: %q", q.Answer)
	}
	wantError(t, e.get(t, "/documents/"+up.DocumentID, a.key), http.StatusNotFound)
	list := decodeAs[struct {
		Documents []apiDocument `json:"documents"`
	}](t, e.get(t, "/documents?owner_id="+cus, a.key))
	if len(list.Documents) != 1 || list.Documents[0].DocumentID != other.DocumentID {
		t.Errorf("after delete the owner lists %+v, want only %s", list.Documents, other.DocumentID)
	}

	// Logs carry neither keys nor document text.
	logs := e.logs.String()
	for _, secret := range []string{a.key, "blue ceramic pot", "rye bread"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
	if !strings.Contains(logs, "/query/customer") {
		t.Errorf("no request line in the log:\n%s", logs)
	}
}

// TestDefaultLimits checks that a server configured without limits refuses
// a file over 64 MiB and a text over 10 MiB, and says which limit it hit.
func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDefaultLimits())
	a := e.a
	t.Run("text", func(t *testing.T) {
		e.unchanged(t, func() {
			body := `{"owner_id": "` + a.projectID + `", "text": "` + strings.Repeat(" ", 10<<20+1) + `"}`
			wantError(t, e.postJSON(t, "/upload/text", a.key, body), http.StatusRequestEntityTooLarge, "text is 10485761 bytes, over the limit of 10485760 bytes (10 MiB)")
		})
	})
	t.Run("file", func(t *testing.T) {
		e.unchanged(t, func() {
			pr, pw := io.Pipe()
			mw := multipart.NewWriter(pw)
			go func() {
				fw, err := mw.CreateFormFile("file", "zeros.bin")
				if err == nil {
					_, err = io.CopyN(fw, zeroReader{}, 64<<20+1)
				}
				if err == nil {
					var dw io.Writer
					if dw, err = mw.CreateFormField("data"); err == nil {
						_, err = fmt.Fprintf(dw, `{"owner_id": %q}`, a.projectID)
					}
				}
				if err == nil {
					err = mw.Close()
				}
				pw.CloseWithError(err)
			}()
			r := e.do(t, http.MethodPost, "/upload/file", a.key, mw.FormDataContentType(), pr)
			pr.Close()
			wantError(t, r, http.StatusRequestEntityTooLarge, "limit of 64 MiB")
		})
	})
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestDeleteWhileQueuedOrProcessing deletes one document while its job is
// inside the embedder and another while its job waits in the queue: both
// jobs end FAILED saying why, the running one at once, and nothing of
// either stays behind.
func TestDeleteWhileQueuedOrProcessing(t *testing.T) {
	t.Parallel()
	gate := newGateEmbedder()
	e := newEnv(t, withWorkers(1), withEmbedder(gate))
	a := e.a
	owner := a.customers[0]
	upload := func(text string) apiUpload {
		return decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", a.key, map[string]any{"owner_id": owner, "text": text}))
	}
	gate.armed.Store(true)
	running := upload("The zephyrine gauge reads the pressure of the boiler every minute.")
	gate.waitEntered(t)
	queued := upload("The quokkalight lamp is switched on at dusk by the caretaker.")
	// The queued one first: the running one's job ends at its delete, and
	// the worker would then take the queued one.
	for _, up := range []apiUpload{queued, running} {
		if r := e.do(t, http.MethodDelete, "/documents/"+up.DocumentID, a.key, "", nil); r.status != http.StatusOK {
			t.Fatalf("delete: %s", r)
		}
	}
	// The running job stops when its document goes, not when its work
	// would have ended (here never: the embedder is held).
	for _, up := range []apiUpload{running, queued} {
		j := e.waitJob(t, a.key, up.JobID)
		if j.Status != store.StatusFailed || !strings.Contains(j.Error, "deleted") {
			t.Errorf("job of a deleted document ended %s (%q), want FAILED saying it was deleted", j.Status, j.Error)
		}
	}
	close(gate.release)
	if seqs, err := e.store.OwnerSeqs(owner); err != nil || len(seqs) != 0 {
		t.Errorf("chunks of deleted documents were stored: %v %v", seqs, err)
	}
	for _, word := range []string{"zephyrine", "quokkalight"} {
		if q := e.query(t, a.key, "/query/customer", map[string]any{"customer_id": owner, "query": word}); len(q.Chunks) != 0 {
			t.Errorf("query %q finds deleted documents: %+v", word, q.Chunks)
		}
	}
	if n := e.storedFiles(t, owner); n != 0 {
		t.Errorf("%d original files of deleted documents are left", n)
	}
}

// TestConcurrentUploads sends uploads for one owner at the same time: each
// is indexed once and found by its own word.
func TestConcurrentUploads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.a
	owner := a.customers[0]
	words := []string{"marzipan", "obsidian", "tamarind", "xylophone", "galleon", "quasar", "walrus", "juniper"}
	ups := make([]apiUpload, len(words))
	t.Run("upload", func(t *testing.T) {
		for i, w := range words {
			t.Run(w, func(t *testing.T) {
				t.Parallel()
				text := fmt.Sprintf("This note is about the %s. Nobody else here writes about the %s.", w, w)
				ups[i] = decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", a.key, map[string]any{"owner_id": owner, "text": text, "name": w}))
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	total := 0
	for _, up := range ups {
		j := e.waitJob(t, a.key, up.JobID)
		if j.Status != store.StatusSucceeded {
			t.Fatalf("job %+v", j)
		}
		total += j.Chunks
	}
	if seqs, _ := e.store.OwnerSeqs(owner); len(seqs) != total {
		t.Errorf("the owner has %d chunks stored, the jobs made %d", len(seqs), total)
	}
	for i, w := range words {
		q := e.query(t, a.key, "/query/customer", map[string]any{"customer_id": owner, "query": w, "top_k": 1})
		if len(q.Chunks) != 1 || q.Chunks[0].DocumentID != ups[i].DocumentID {
			t.Errorf("query %q: %+v, want document %s", w, q.Chunks, ups[i].DocumentID)
		}
	}
}

// A file upload is spooled to disk as it arrives: its bytes never sit in
// the server's memory, whatever its size (read whole, a 16 MiB upload
// allocated some 40 MiB, and sixty at once took a server to 2.6 GB).
func TestUploadIsSpooledNotHeld(t *testing.T) {
	const size = 16 << 20
	e := newEnv(t, withMaxFileBytes(32<<20))
	// The workers stop, so that nothing reads the upload back meanwhile.
	if err := e.engine.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	content := []byte(strings.Repeat("A line of the harbour log, written each morning.\n", size/50))
	body, ctype := multipartBody(t, filePart("log.txt", content), dataPart(map[string]string{"owner_id": e.a.projectID}))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := e.do(t, http.MethodPost, "/upload/file", e.a.key, ctype, bytes.NewReader(body))
	runtime.ReadMemStats(&after)
	if r.status != http.StatusOK {
		t.Fatalf("upload: %s", r)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/2 {
		t.Errorf("uploading %d MiB allocated %d MiB", size>>20, alloc>>20)
	}
	up := decodeAs[apiUpload](t, r)
	d, err := e.store.Document(up.DocumentID)
	if err != nil || d.Size != int64(len(content)) {
		t.Fatalf("the stored document: %+v, %v", d, err)
	}
	got, err := e.store.ReadOriginal(d)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("the original read back differs (%d bytes, %v)", len(got), err)
	}
	if left, _ := filepath.Glob(filepath.Join(e.dir, "spool", "*")); len(left) != 0 {
		t.Errorf("the spool holds %v after the upload", left)
	}
}
