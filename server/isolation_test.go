package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/docsift/docsift/store"
)

// isolationCase is one request of project A's key that names something of
// project B.
type isolationCase struct {
	name   string
	method string
	path   string
	body   any    // JSON body, or nil
	owner  string // for /upload/file: the data part's owner_id
	status int
}

// TestTenantIsolation sends project A's key against every endpoint with
// every id of project B. Project ids in a body are 403, every other id 404,
// exactly like ids that do not exist; nothing answers 200, nothing changes,
// and no answer shows B's data.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	a, b := s.a, s.b
	bIDs := map[string]string{
		"B project":           b.projectID,
		"B customer":          b.customers[0],
		"B project document":  s.docB,
		"B customer document": s.docB1,
		"B job":               s.jobB,
		"B project job":       s.jobOf(t, s.docB),
	}
	// statusFor is the answer for an id of B where an owner is expected.
	ownerStatus := func(id string) int {
		if strings.HasPrefix(id, store.PrefixProject) {
			return http.StatusForbidden
		}
		return http.StatusNotFound
	}
	session := func(project, customer string) map[string]any {
		m := map[string]any{"project_id": project, "services": []string{"all"}, "success_url": "https://e.com/ok", "cancel_url": "https://e.com/no"}
		if customer != "" {
			m["customer_id"] = customer
		}
		return m
	}

	var cases []isolationCase
	add := func(name, method, path string, body any, status int) {
		cases = append(cases, isolationCase{name: name, method: method, path: path, body: body, status: status})
	}
	for _, id := range []string{b.projectID} {
		add("customer/create project_id", "POST", "/customer/create", map[string]any{"project_id": id, "name": "intruder"}, 403)
		add("session/multi-tenant project_id", "POST", "/session/multi-tenant", session(id, b.customers[0]), 403)
		add("session/single-tenant project_id", "POST", "/session/single-tenant", session(id, ""), 403)
		add("query/project project_id", "POST", "/query/project", map[string]any{"project_id": id, "query": s.wordOf[b.projectID]}, 403)
	}
	for _, id := range []string{b.projectID, b.customers[0]} {
		kind := id[:4]
		add("upload/text owner_id "+kind, "POST", "/upload/text", map[string]any{"owner_id": id, "text": "intruder text"}, ownerStatus(id))
		cases = append(cases, isolationCase{name: "upload/file owner_id " + kind, method: "POST", path: "/upload/file", owner: id, status: ownerStatus(id)})
		add("documents list owner_id "+kind, "GET", "/documents?owner_id="+id, nil, ownerStatus(id))
		add("query/customer customer_id "+kind, "POST", "/query/customer", map[string]any{"customer_id": id, "query": s.wordOf[b.customers[0]]}, 404)
	}
	add("session/multi-tenant customer_id", "POST", "/session/multi-tenant", session(a.projectID, b.customers[0]), 404)
	// Ids in paths are looked up, whatever their kind: all of B's are 404.
	for kind, id := range bIDs {
		add("GET job "+kind, "GET", "/jobs/"+id, nil, 404)
		add("GET document "+kind, "GET", "/documents/"+id, nil, 404)
		add("DELETE document "+kind, "DELETE", "/documents/"+id, nil, 404)
	}

	// Everything of B that must never appear in A's answers.
	secrets := []string{s.wordOf[b.projectID], s.wordOf[b.customers[0]], "project B", "customer B1", "notes " + s.wordOf[b.customers[0]]}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.unchanged(t, func() {
				var r response
				switch {
				case c.path == "/upload/file":
					r = s.uploadFile(t, a.key, filePart("x.txt", []byte("intruder text")), dataPart(map[string]any{"owner_id": c.owner}))
				case c.body != nil:
					r = s.postJSON(t, c.path, a.key, c.body)
				default:
					r = s.do(t, c.method, c.path, a.key, "", nil)
				}
				if r.status == http.StatusOK {
					t.Fatalf("project A's key reached project B: %s", r)
				}
				wantError(t, r, c.status)
				for _, secret := range secrets {
					if bytes.Contains(r.body, []byte(secret)) {
						t.Errorf("the answer shows B's %q: %s", secret, r)
					}
				}
			})
		})
	}

	t.Run("customer list holds only A's customers", func(t *testing.T) {
		r := s.get(t, "/customers", a.key)
		if r.status != http.StatusOK {
			t.Fatalf("list: %s", r)
		}
		for _, leak := range append([]string{b.projectID, b.customers[0]}, secrets...) {
			if bytes.Contains(r.body, []byte(leak)) {
				t.Errorf("A's customer list shows %q: %s", leak, r)
			}
		}
	})

	t.Run("B is intact", func(t *testing.T) {
		for _, doc := range []string{s.docB, s.docB1} {
			if d := decodeAs[apiDocument](t, s.get(t, "/documents/"+doc, b.key)); d.Status != store.StatusSucceeded {
				t.Errorf("B's document %s is %s", doc, d.Status)
			}
		}
		q := s.query(t, b.key, "/query/customer", map[string]any{"customer_id": b.customers[0], "query": s.wordOf[b.customers[0]]})
		if !q.documents()[s.docB1] {
			t.Errorf("B's key no longer finds B's document: %+v", q.Chunks)
		}
	})
}

// TestOwnerIsolation checks that inside one project each owner (the
// project itself and each customer) sees only its own documents, even when
// it asks for another owner's words.
func TestOwnerIsolation(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	a, b := s.a, s.b
	type owner struct {
		key, id, doc, path, field string
	}
	owners := []owner{
		{a.key, a.projectID, s.docA, "/query/project", "project_id"},
		{a.key, a.customers[0], s.docA1, "/query/customer", "customer_id"},
		{a.key, a.customers[1], s.docA2, "/query/customer", "customer_id"},
		{b.key, b.projectID, s.docB, "/query/project", "project_id"},
		{b.key, b.customers[0], s.docB1, "/query/customer", "customer_id"},
	}
	for _, asker := range owners {
		for _, target := range owners {
			word := s.wordOf[target.id]
			t.Run(fmt.Sprintf("%s asks for %s", asker.id, word), func(t *testing.T) {
				q := s.query(t, asker.key, asker.path, map[string]any{asker.field: asker.id, "query": "codeword " + word, "top_k": 50})
				for _, c := range q.Chunks {
					if c.DocumentID != asker.doc {
						t.Errorf("%s got a chunk of document %s", asker.id, c.DocumentID)
					}
				}
				if target.id == asker.id {
					if len(q.Chunks) == 0 || !strings.Contains(q.Chunks[0].Text, word) {
						t.Errorf("%s does not find its own document: %+v", asker.id, q.Chunks)
					}
					return
				}
				for _, other := range owners {
					if other.id != asker.id && strings.Contains(q.Answer+fmt.Sprint(q.Chunks), s.wordOf[other.id]) {
						t.Errorf("%s sees the word of %s: %q", asker.id, other.id, q.Answer)
					}
				}
			})
		}
	}
}
