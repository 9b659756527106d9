package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// openAPINoAuth are the operations that take no API key: the service's own
// endpoints, capability URLs (sessions, subpages) and the pages and assets.
var openAPINoAuth = map[string]bool{
	"GET /healthz":                     true,
	"GET /openapi.json":                true,
	"GET /s/{token}":                   true,
	"POST /s/{token}/upload":           true,
	"GET /s/{token}/jobs":              true,
	"POST /s/{token}/close":            true,
	"POST /s/{token}/drive/connect":    true,
	"GET /s/{token}/drive/files":       true,
	"POST /s/{token}/drive/import":     true,
	"POST /s/{token}/drive/disconnect": true,
	"GET /oauth/google/callback":       true,
	"GET /subpages/{file}":             true,
	"GET /console":                     true,
	"GET /ui/assets/{name}":            true,
}

// openAPISuccess are the operations whose success is not a 200: where
// Google sends the browser back after consent answers by sending it on to
// the session's page, and a page closing its session hears nothing back.
var openAPISuccess = map[string]string{
	"GET /oauth/google/callback": "303",
	"POST /s/{token}/close":      "204",
}

// openAPICannotFail are the operations with no error response to declare.
var openAPICannotFail = map[string]bool{
	"GET /healthz":      true,
	"GET /openapi.json": true,
}

const errorSchemaRef = "#/components/schemas/Error"

var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPIFixture is a server over a fresh store with one project.
type openAPIFixture struct {
	srv       *Server
	engine    *ingest.Engine
	projectID string
	key       string
}

func openAPIServer(t *testing.T) (*Server, string) {
	t.Helper()
	f := newOpenAPIFixture(t)
	return f.srv, f.key
}

func newOpenAPIFixture(t *testing.T) *openAPIFixture {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, key, err := st.CreateProject("openapi")
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1}, logger)
	s := New(Config{BaseURL: "http://docsift.test"}, st, engine, search.New(engine, st, llm.NewExtractive(), nil, logger), logger)
	return &openAPIFixture{srv: s, engine: engine, projectID: p.ID, key: key}
}

// fetchOpenAPI gets the document the way a client does, over HTTP.
func fetchOpenAPI(t *testing.T, base string) ([]byte, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: status %d, want 200: %s", resp.StatusCode, body)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Fatalf("GET /openapi.json: Content-Type %q, want application/json", resp.Header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("GET /openapi.json: not JSON: %v", err)
	}
	return body, doc
}

// openAPIOperation is one documented path and method.
type openAPIOperation struct {
	key string // "METHOD /path"
	op  map[string]any
}

func openAPIOperations(t *testing.T, doc map[string]any) []openAPIOperation {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatal("the document has no paths object")
	}
	var ops []openAPIOperation
	for p, item := range paths {
		item, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("paths[%q] is not an object", p)
		}
		for _, m := range openAPIMethods {
			if op, ok := item[m].(map[string]any); ok {
				ops = append(ops, openAPIOperation{key: strings.ToUpper(m) + " " + p, op: op})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].key < ops[j].key })
	return ops
}

// resolve follows a local $ref ("#/a/b") within doc.
func resolve(doc map[string]any, ref string) (any, bool) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if ptr == "" {
		return doc, true
	}
	var cur any = doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			if cur, ok = v[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// deref returns v, or what it refers to when it is a {"$ref": ...} object.
func deref(doc map[string]any, v any) map[string]any {
	m, _ := v.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		r, _ := resolve(doc, ref)
		m, _ = r.(map[string]any)
	}
	return m
}

func TestOpenAPIServedAndSelfContained(t *testing.T) {
	s, _ := openAPIServer(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	_, doc := fetchOpenAPI(t, srv.URL)

	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Errorf("openapi is %q, want 3.0.x", v)
	}
	info, _ := doc["info"].(map[string]any)
	if info["title"] != "docsift" || info["version"] != "1.0.0" {
		t.Errorf("info title/version = %v/%v, want docsift/1.0.0", info["title"], info["version"])
	}

	var walk func(at string, v any)
	refs := 0
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs++
				if _, ok := resolve(doc, ref); !ok {
					t.Errorf("%s: $ref %q does not resolve within the document", at, ref)
				}
			}
			for k, e := range v {
				walk(at+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(at+"/"+strconv.Itoa(i), e)
			}
		}
	}
	walk("#", doc)
	if refs == 0 {
		t.Error("the document has no $ref at all; expected shared schemas and responses")
	}
}

// TestOpenAPIValidates checks the document against the OpenAPI 3.0 rules,
// examples included.
func TestOpenAPIValidates(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPIDoc)
	if err != nil {
		t.Fatalf("loading openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
}

var echoParam = regexp.MustCompile(`:([^/]+)`)

// TestOpenAPIMatchesRoutes keeps the document and the router in step: a
// route added without documentation, or documentation of a route that is
// gone, fails here by name.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s, _ := openAPIServer(t)
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, o := range openAPIOperations(t, doc) {
		documented[o.key] = true
	}

	registered := map[string]bool{}
	for _, r := range s.Echo().Routes() {
		if r.Method == echo.RouteNotFound {
			continue // echo's own 404 handling, not an operation
		}
		if strings.Contains(r.Path, "*") {
			t.Errorf("route %s %s is a wildcard, which OpenAPI cannot describe: give it a named parameter", r.Method, r.Path)
			continue
		}
		key := r.Method + " " + echoParam.ReplaceAllString(r.Path, "{$1}")
		registered[key] = true
		if !documented[key] {
			t.Errorf("route %s is served but not documented in server/openapi.json", key)
		}
	}
	for key := range documented {
		if !registered[key] {
			t.Errorf("operation %s is documented in server/openapi.json but no such route is served", key)
		}
	}
	if len(registered) == 0 {
		t.Fatal("the router has no routes")
	}
}

// TestOpenAPIOperations checks what every operation must say: an id, a
// summary, its security, its 401 and its error responses.
func TestOpenAPIOperations(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	if scheme := deref(doc, mustPath(doc, "components", "securitySchemes", "bearerAuth")); scheme["type"] != "http" || scheme["scheme"] != "bearer" {
		t.Errorf("components.securitySchemes.bearerAuth = %v, want http bearer", scheme)
	}
	global, _ := doc["security"].([]any)
	ids := map[string]string{}
	for _, o := range openAPIOperations(t, doc) {
		id, _ := o.op["operationId"].(string)
		switch {
		case id == "":
			t.Errorf("%s has no operationId", o.key)
		case ids[id] != "":
			t.Errorf("%s and %s share operationId %s", ids[id], o.key, id)
		}
		ids[id] = o.key
		if sum, _ := o.op["summary"].(string); sum == "" {
			t.Errorf("%s has no summary", o.key)
		}

		security, own := o.op["security"].([]any)
		if !own {
			security = global
		}
		responses, _ := o.op["responses"].(map[string]any)
		success := "200"
		if status, ok := openAPISuccess[o.key]; ok {
			success = status
		}
		if _, ok := responses[success]; !ok {
			t.Errorf("%s declares no %s response", o.key, success)
		}
		if openAPINoAuth[o.key] {
			if !own || len(security) != 0 {
				t.Errorf("%s takes no key but does not declare security: []", o.key)
			}
		} else {
			if !requiresBearer(security) {
				t.Errorf("%s takes a key but its security is not bearerAuth", o.key)
			}
			if !isErrorResponse(doc, responses["401"]) {
				t.Errorf("%s takes a key but declares no 401 with the Error schema", o.key)
			}
		}

		errs := 0
		for status, r := range responses {
			if status >= "400" && isErrorResponse(doc, r) {
				errs++
			}
		}
		if errs == 0 && !openAPICannotFail[o.key] {
			t.Errorf("%s declares no error response with the Error schema", o.key)
		}
	}
}

func mustPath(doc map[string]any, keys ...string) any {
	var cur any = doc
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	return cur
}

func requiresBearer(security []any) bool {
	for _, req := range security {
		if m, ok := req.(map[string]any); ok {
			if _, ok := m["bearerAuth"]; ok {
				return true
			}
		}
	}
	return false
}

// isErrorResponse reports whether a response (or a reference to one) is
// JSON with the shared Error schema.
func isErrorResponse(doc map[string]any, r any) bool {
	resp := deref(doc, r)
	content, _ := resp["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	return schema["$ref"] == errorSchemaRef
}

// TestOpenAPIStatusesDocumented sends every documented operation a request
// with no key and one with a valid key but an empty body, and checks that
// the status the server answers is one the document declares for it, and
// that a JSON error has the Error shape.
func TestOpenAPIStatusesDocumented(t *testing.T) {
	s, key := openAPIServer(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	pathParam := regexp.MustCompile(`\{([^}]+)\}`)
	for _, o := range openAPIOperations(t, doc) {
		method, path, _ := strings.Cut(o.key, " ")
		url := srv.URL + pathParam.ReplaceAllStringFunc(path, func(p string) string {
			if p == "{name}" {
				return "app.css" // an asset that exists
			}
			return "nope"
		})
		responses, _ := o.op["responses"].(map[string]any)
		for _, withKey := range []bool{false, true} {
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader("{}")
			}
			req, err := http.NewRequest(method, url, body)
			if err != nil {
				t.Fatal(err)
			}
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			if withKey {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			status := strconv.Itoa(resp.StatusCode)
			if _, ok := responses[status]; !ok {
				t.Errorf("%s (key: %v) answered %s, which is not documented: %s", o.key, withKey, status, data)
				continue
			}
			ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			content, _ := deref(doc, responses[status])["content"].(map[string]any)
			documentedTypes := slices.Collect(maps.Keys(content))
			if len(data) > 0 && !slices.Contains(documentedTypes, ctype) {
				t.Errorf("%s (key: %v) answered %s as %s; documented: %v", o.key, withKey, status, ctype, documentedTypes)
			}
			if resp.StatusCode >= 400 && ctype == "application/json" {
				var e struct {
					Error *string `json:"error"`
				}
				if err := json.Unmarshal(data, &e); err != nil || e.Error == nil || *e.Error == "" {
					t.Errorf("%s (key: %v) answered %s without an error message: %s", o.key, withKey, status, data)
				}
			}
		}
	}
}

// TestOpenAPIResponsesMatchSchemas walks the API as a client would, from
// creating a customer to deleting a document, and checks every response
// against the documented schema of its operation and status: required
// fields, types and bounds, and no field the document does not name.
func TestOpenAPIResponsesMatchSchemas(t *testing.T) {
	f := newOpenAPIFixture(t)
	if err := f.engine.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.engine.Shutdown(context.Background()) })
	srv := httptest.NewServer(f.srv.Handler())
	defer srv.Close()
	kdoc, err := openapi3.NewLoader().LoadFromData(openAPIDoc)
	if err != nil {
		t.Fatal(err)
	}
	if err := kdoc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}

	// call sends a request for the documented operation (method, template)
	// at path, checks the request body against the documented request
	// schema and the response against the documented response, and
	// returns the decoded JSON response.
	call := func(method, template, path string, body any, wantStatus int) map[string]any {
		t.Helper()
		op := kdoc.Paths.Value(template).GetOperation(method)
		if op == nil {
			t.Fatalf("%s %s is not documented", method, template)
		}
		var rd io.Reader
		ctype := ""
		switch b := body.(type) {
		case nil:
		case *multipartBody:
			rd, ctype = strings.NewReader(b.data), b.contentType
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			var generic any
			json.Unmarshal(raw, &generic)
			if wantStatus == http.StatusOK {
				schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
				if err := schema.VisitJSON(generic); err != nil {
					t.Errorf("%s %s: the documented request schema refuses a request the server accepts: %v", method, template, err)
				}
			}
			rd, ctype = strings.NewReader(string(raw)), "application/json"
		}
		req, err := http.NewRequest(method, srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Authorization", "Bearer "+f.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != wantStatus {
			t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, wantStatus, data)
		}
		return checkDocumented(t, kdoc, method, template, resp, data)
	}

	call("GET", "/healthz", "/healthz", nil, 200)
	call("GET", "/me", "/me", nil, 200)
	cus := call("POST", "/customer/create", "/customer/create", map[string]any{"project_id": f.projectID, "name": "Acme"}, 200)
	customerID, _ := cus["customer_id"].(string)
	call("POST", "/customer/create", "/customer/create", map[string]any{"project_id": f.projectID, "name": "Globex"}, 200)
	call("GET", "/customers", "/customers", nil, 200)
	if page := call("GET", "/customers", "/customers?limit=1", nil, 200); page["next_cursor"] == nil {
		t.Fatalf("a page of one of two customers has no next_cursor: %v", page)
	}
	call("GET", "/customers", "/customers?limit=0", nil, 400)
	if page := call("GET", "/customers", "/customers?find=GLOB", nil, 200); len(page["customers"].([]any)) != 1 {
		t.Fatalf("find=GLOB: %v, want Globex alone", page)
	}
	call("GET", "/customers", "/customers?find="+strings.Repeat("x", 201), nil, 400)
	sess := call("POST", "/session/multi-tenant", "/session/multi-tenant", map[string]any{
		"project_id": f.projectID, "customer_id": customerID, "services": []string{"all"},
		"success_url": "https://example.com/done", "cancel_url": "https://example.com/cancel",
	}, 200)
	call("POST", "/session/single-tenant", "/session/single-tenant", map[string]any{
		"project_id": f.projectID, "services": []string{"file_upload", "google_drive"},
		"success_url": "https://example.com/done", "cancel_url": "https://example.com/cancel",
	}, 200)

	up := call("POST", "/upload/text", "/upload/text", map[string]any{
		"owner_id": customerID, "name": "refunds", "metadata": map[string]string{"dept": "support"},
		"text":        "Refunds are issued within 14 days of a return.\n\nShipping is free for orders over 50 euros.",
		"external_id": "handbook/refunds.md",
	}, 200)
	jobID, _ := up["job_id"].(string)
	docID, _ := up["document_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if j, err := f.engine.WaitJob(ctx, jobID); err != nil || j.Status != store.StatusSucceeded {
		t.Fatalf("job %s: %+v, %v", jobID, j, err)
	}
	call("GET", "/jobs/{job_id}", "/jobs/"+jobID, nil, 200)
	call("GET", "/documents", "/documents?owner_id="+customerID, nil, 200)
	byExternal := call("GET", "/documents", "/documents?owner_id="+customerID+"&external_id=handbook/refunds.md", nil, 200)
	if docs, _ := byExternal["documents"].([]any); len(docs) != 1 {
		t.Fatalf("the upload is not found by its external_id: %v", byExternal)
	}
	call("GET", "/documents/{document_id}", "/documents/"+docID, nil, 200)

	q := call("POST", "/query/customer", "/query/customer", map[string]any{"customer_id": customerID, "query": "how long do refunds take", "top_k": 3.0}, 200)
	chunks, _ := q["chunks"].([]any)
	if len(chunks) == 0 {
		t.Fatalf("the query found nothing: %v", q)
	}
	chunkID, _ := chunks[0].(map[string]any)["chunk_id"].(string)
	call("POST", "/query/customer", "/query/customer", map[string]any{"customer_id": customerID, "query": "refunds", "stream": true}, 200)
	filtered := call("POST", "/query/customer", "/query/customer", map[string]any{"customer_id": customerID, "query": "refunds", "filter": map[string]any{"and": []any{
		map[string]any{"metadata.dept": map[string]any{"in": []string{"support", "sales"}}},
		map[string]any{"created_at": map[string]any{"gte": "2020-01-01T00:00:00Z", "lt": "2100-01-01T00:00:00Z"}},
		map[string]any{"or": []any{map[string]any{"document_id": map[string]any{"eq": docID}}, map[string]any{"metadata.x": map[string]any{"eq": "y"}}}},
	}}}, 200)
	if chunks, _ := filtered["chunks"].([]any); len(chunks) == 0 {
		t.Fatalf("the filtered query found nothing: %v", filtered)
	}
	call("POST", "/query/project", "/query/project", map[string]any{"project_id": f.projectID, "query": "refunds", "top_k": 5}, 200)
	call("POST", "/subpage", "/subpage", map[string]any{"chunk_id": chunkID, "owner_id": customerID, "varience": 2.0}, 400)
	call("POST", "/search/internet", "/search/internet", map[string]any{"query": "refunds"}, 503)

	token := strings.TrimPrefix(sess["url"].(string), "http://docsift.test/s/")
	call("GET", "/s/{token}", "/s/"+token, nil, 200)
	call("POST", "/s/{token}/upload", "/s/"+token+"/upload", newMultipartBody(t, "notes.txt", []byte("Returns need the original receipt."), ""), 200)
	call("GET", "/s/{token}/jobs", "/s/"+token+"/jobs", nil, 200)
	call("GET", "/s/{token}/jobs", "/s/"+token+"/jobs?job_id="+jobID, nil, 200)
	call("POST", "/s/{token}/close", "/s/"+token+"/close?how=later", nil, 400)
	call("POST", "/s/{token}/close", "/s/"+token+"/close?how=done", nil, 204)
	call("GET", "/s/{token}/jobs", "/s/"+token+"/jobs", nil, 410)

	// A PDF of the project's own, sliced into a subpage.
	pdfUp := call("POST", "/upload/file", "/upload/file", newMultipartBody(t, "harbour.pdf", testpdf.Pages([]string{
		"Harbour report. The pier was repaired in March.",
		"Tide gauge. A new tide gauge records the water level every minute.",
		"Budget. The dredging budget is unchanged.",
	}), `{"owner_id": "`+f.projectID+`", "metadata": {"source": "test"}}`), 200)
	if j, err := f.engine.WaitJob(ctx, pdfUp["job_id"].(string)); err != nil || j.Status != store.StatusSucceeded {
		t.Fatalf("PDF job: %+v, %v", j, err)
	}
	pq := call("POST", "/query/project", "/query/project", map[string]any{"project_id": f.projectID, "query": "tide gauge water level", "top_k": 1}, 200)
	pchunks, _ := pq["chunks"].([]any)
	if len(pchunks) == 0 {
		t.Fatalf("the PDF query found nothing: %v", pq)
	}
	pdfChunk, _ := pchunks[0].(map[string]any)["chunk_id"].(string)
	sub := call("POST", "/subpage", "/subpage", map[string]any{"chunk_id": pdfChunk, "owner_id": f.projectID, "varience": 1}, 200)
	subURL, _ := sub["subpage_url"].(string)
	call("GET", "/subpages/{file}", strings.TrimPrefix(subURL, "http://docsift.test"), nil, 200)

	call("DELETE", "/documents/{document_id}", "/documents/"+docID, nil, 200)
	call("GET", "/documents/{document_id}", "/documents/"+docID, nil, 404)
}

// multipartBody is a ready multipart/form-data body.
type multipartBody struct {
	data, contentType string
}

// newMultipartBody holds a file part and, unless data is empty, a data
// part.
func newMultipartBody(t *testing.T, name string, content []byte, data string) *multipartBody {
	t.Helper()
	var buf strings.Builder
	w := multipart.NewWriter(&buf)
	fw, err := w.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(content)
	if data != "" {
		if err := w.WriteField("data", data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &multipartBody{data: buf.String(), contentType: w.FormDataContentType()}
}

// undocumentedFields lists the object members in v that schema does not
// declare, so a field added to a response without documentation is caught.
func undocumentedFields(schema *openapi3.Schema, v any, at string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		props := schemaProperties(schema)
		var extra *openapi3.Schema
		if ap := schema.AdditionalProperties.Schema; ap != nil {
			extra = ap.Value
		}
		for k, e := range v {
			switch {
			case props[k] != nil:
				out = append(out, undocumentedFields(props[k], e, at+"."+k)...)
			case extra != nil:
				out = append(out, undocumentedFields(extra, e, at+"."+k)...)
			default:
				out = append(out, at+"."+k)
			}
		}
	case []any:
		if schema.Items != nil {
			for i, e := range v {
				out = append(out, undocumentedFields(schema.Items.Value, e, at+"["+strconv.Itoa(i)+"]")...)
			}
		}
	}
	return out
}

// schemaProperties are a schema's properties, those of its allOf members
// included.
func schemaProperties(s *openapi3.Schema) map[string]*openapi3.Schema {
	props := map[string]*openapi3.Schema{}
	for k, p := range s.Properties {
		props[k] = p.Value
	}
	for _, sub := range s.AllOf {
		maps.Copy(props, schemaProperties(sub.Value))
	}
	return props
}
