package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// eq and in build filter conditions.
func eq(field, value string) map[string]any {
	return map[string]any{field: map[string]any{"eq": value}}
}

func in(field string, values ...string) map[string]any {
	return map[string]any{field: map[string]any{"in": append([]string{}, values...)}}
}

func all(clauses ...any) map[string]any { return map[string]any{"and": append([]any{}, clauses...)} }

func any_(clauses ...any) map[string]any { return map[string]any{"or": clauses} }

// uploadWith uploads text with metadata (and an external id, when not
// empty) and returns the upload's response without waiting for its job.
func (e *env) uploadWith(t *testing.T, key, owner, name, text string, metadata map[string]string, externalID string) apiUpload {
	t.Helper()
	body := map[string]any{"owner_id": owner, "name": name, "text": text, "metadata": metadata}
	if externalID != "" {
		body["external_id"] = externalID
	}
	return decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", key, body))
}

// indexed uploads text with metadata, waits for its job to succeed and
// returns the document id.
func (e *env) indexed(t *testing.T, key, owner, name, text string, metadata map[string]string) string {
	t.Helper()
	up := e.uploadWith(t, key, owner, name, text, metadata, "")
	if j := e.waitJob(t, key, up.JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("indexing %q: %s: %s", name, j.Status, j.Error)
	}
	return up.DocumentID
}

// docsOf returns the sorted distinct document ids of a query's chunks.
func docsOf(q apiQuery) []string {
	docs := keys(q.documents())
	slices.Sort(docs)
	return docs
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func TestQueryFilterBad(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	cus := s.a.customers[0]
	q := func(filter any) map[string]any {
		return map[string]any{"customer_id": cus, "query": "codeword", "filter": filter}
	}
	deep := any(eq("metadata.a", "1"))
	for range 6 {
		deep = all(deep)
	}
	many := make([]any, 70)
	for i := range many {
		many[i] = eq("metadata.a", fmt.Sprint(i))
	}
	values := make([]string, 1100)
	for i := range values {
		values[i] = fmt.Sprint(i)
	}
	cases := badCases{
		{name: "not an object", body: q("legal"), status: 400, want: []string{"filter", "must be an object", "not a string"}},
		{name: "empty object", body: q(map[string]any{}), status: 400, want: []string{"filter", "empty object"}},
		{name: "two keys", body: q(map[string]any{"metadata.a": map[string]any{"eq": "1"}, "metadata.b": map[string]any{"eq": "2"}}), status: 400, want: []string{"filter", "exactly one"}},
		{name: "unknown field", body: q(eq("title", "x")), status: 400, want: []string{"filter", `unknown field "title"`, "metadata.KEY"}},
		{name: "metadata without key", body: q(eq("metadata.", "x")), status: 400, want: []string{"filter", "names no key"}},
		{name: "unknown operator", body: q(map[string]any{"metadata.dept": map[string]any{"equals": "legal"}}), status: 400, want: []string{"filter.metadata.dept.equals", `unknown operator "equals"`, `"eq" or "in"`}},
		{name: "two operators", body: q(map[string]any{"metadata.dept": map[string]any{"eq": "a", "in": []string{"b"}}}), status: 400, want: []string{"filter.metadata.dept", "exactly one operator"}},
		{name: "number value", body: q(map[string]any{"metadata.year": map[string]any{"eq": 2024}}), status: 400, want: []string{"filter.metadata.year.eq", "must be a string, not a number", `write "2024"`}},
		{name: "in not a list", body: q(map[string]any{"document_id": map[string]any{"in": "doc_x"}}), status: 400, want: []string{"filter.document_id.in", "must be an array"}},
		{name: "in empty", body: q(in("document_id")), status: 400, want: []string{"filter.document_id.in", "at least one value"}},
		{name: "in with a number", body: q(map[string]any{"metadata.a": map[string]any{"in": []any{"x", true}}}), status: 400, want: []string{"filter.metadata.a.in[1]", "must be a string, not true or false"}},
		{name: "and not a list", body: q(map[string]any{"and": eq("metadata.a", "1")}), status: 400, want: []string{"filter.and", "must be an array of clauses"}},
		{name: "and empty", body: q(all()), status: 400, want: []string{"filter.and", "at least one clause"}},
		{name: "bad clause in or", body: q(all(eq("metadata.a", "1"), any_(eq("metadata.b", "2"), "x"))), status: 400, want: []string{"filter.and[1].or[1]", "must be an object"}},
		{name: "bad timestamp", body: q(map[string]any{"created_at": map[string]any{"gte": "2026-13-01"}}), status: 400, want: []string{"filter.created_at.gte", `"2026-13-01" is not an RFC 3339 timestamp`}},
		{name: "timestamp not a string", body: q(map[string]any{"created_at": map[string]any{"lt": 1767225600}}), status: 400, want: []string{"filter.created_at.lt", "timestamp string", "not a number"}},
		{name: "time operator", body: q(map[string]any{"created_at": map[string]any{"after": "2026-01-01T00:00:00Z"}}), status: 400, want: []string{"filter.created_at.after", `"gt", "gte", "lt" or "lte"`}},
		{name: "two lower bounds", body: q(map[string]any{"created_at": map[string]any{"gt": "2026-01-01T00:00:00Z", "gte": "2026-01-01T00:00:00Z"}}), status: 400, want: []string{"filter.created_at", "two lower bounds"}},
		{name: "empty range", body: q(map[string]any{"created_at": map[string]any{"gte": "2026-02-01T00:00:00Z", "lt": "2026-01-01T00:00:00Z"}}), status: 400, want: []string{"filter.created_at", "range is empty"}},
		{name: "too deep", body: q(deep), status: 400, want: []string{"filter.and[0].and[0].and[0].and[0].and[0].and", "nested more than 5"}},
		{name: "too many clauses", body: q(all(many...)), status: 400, want: []string{"filter", "more than 64 clauses"}},
		{name: "too many values", body: q(in("metadata.a", values...)), status: 400, want: []string{"filter", "more than 1024 values"}},
		{name: "key twice", body: `{"customer_id": "` + cus + `", "query": "codeword", "filter": {"metadata.a": {"eq": "1", "eq": "2"}}}`, status: 400, want: []string{"filter", `key "eq" twice`}},
		{name: "project route", path: "/query/project", body: map[string]any{"project_id": s.a.projectID, "query": "codeword", "filter": eq("size", "x")}, status: 400, want: []string{"filter", `unknown field "size"`}},
		{name: "stream", body: map[string]any{"customer_id": cus, "query": "codeword", "stream": true, "filter": eq("size", "x")}, status: 400, want: []string{"filter", `unknown field "size"`}},
	}
	runBad(t, s.env, cases.defaults(s.a.key, "/query/customer"))
}

// TestQueryFilterSelects: each kind of condition, and their combinations,
// returns exactly the chunks of the documents it allows.
func TestQueryFilterSelects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key, cus := e.a.key, e.a.customers[0]
	text := func(i int) string {
		return fmt.Sprintf("The walrus census of region %d counted walruses on the sea ice.", i)
	}
	legal1 := e.indexed(t, key, cus, "legal 1", text(1), map[string]string{"dept": "legal", "region": "eu"})
	e.clock.Advance(48 * time.Hour)
	mid := e.clock.Now().Add(-24 * time.Hour)
	sales := e.indexed(t, key, cus, "sales", text(2), map[string]string{"dept": "sales", "region": "eu"})
	legal2 := e.indexed(t, key, cus, "legal 2", text(3), map[string]string{"dept": "legal", "region": "us"})
	bare := e.indexed(t, key, cus, "no metadata", text(4), nil)

	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	for _, c := range []struct {
		name   string
		filter any
		want   []string
	}{
		{"eq", eq("metadata.dept", "legal"), sorted(legal1, legal2)},
		{"in", in("metadata.dept", "sales", "hr"), sorted(sales)},
		{"missing key matches nothing", eq("metadata.dept", ""), nil},
		{"document_id in", in("document_id", bare, legal1, "doc_nope"), sorted(bare, legal1)},
		{"document_id eq", eq("document_id", sales), sorted(sales)},
		{"created before", map[string]any{"created_at": map[string]any{"lt": ts(mid)}}, sorted(legal1)},
		{"created after", map[string]any{"created_at": map[string]any{"gte": ts(mid)}}, sorted(sales, legal2, bare)},
		{"and", all(eq("metadata.dept", "legal"), eq("metadata.region", "eu")), sorted(legal1)},
		{"or", any_(eq("metadata.region", "us"), eq("document_id", bare)), sorted(legal2, bare)},
		{"nested", all(any_(eq("metadata.dept", "legal"), eq("metadata.dept", "sales")), map[string]any{"created_at": map[string]any{"gt": ts(mid)}}), sorted(sales, legal2)},
		{"nothing", eq("metadata.dept", "hr"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus census", "top_k": 10, "filter": c.filter})
			if got := docsOf(q); !slices.Equal(got, c.want) {
				t.Errorf("found documents %v, want %v", got, c.want)
			}
		})
	}
	// null is no filter.
	q := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus census", "top_k": 10, "filter": nil})
	if got := docsOf(q); len(got) != 4 {
		t.Errorf("filter null found %v, want all four documents", got)
	}
}

// TestQueryFilterOnePercent: a filter that allows 1% of an owner's
// documents still returns top_k chunks, all of them allowed, although the
// unfiltered top_k holds none of them.
func TestQueryFilterOnePercent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key, cus := e.a.key, e.a.customers[0]
	const docs, groups, topK = 300, 100, 3
	var jobs []string
	group := map[string]string{}
	for i := range docs {
		g := fmt.Sprint(i % groups)
		text := fmt.Sprintf("Walrus report %d: walruses haul out on the ice to rest.", i)
		if g == "42" {
			text = fmt.Sprintf("Report %d on sea ice: a walrus was seen far off.", i) // less relevant
		}
		up := e.uploadWith(t, key, cus, fmt.Sprint("report ", i), text, map[string]string{"group": g}, "")
		jobs = append(jobs, up.JobID)
		group[up.DocumentID] = g
	}
	for _, j := range jobs {
		if got := e.waitJob(t, key, j); got.Status != store.StatusSucceeded {
			t.Fatalf("job %s: %s %s", j, got.Status, got.Error)
		}
	}
	plain := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus haul out", "top_k": topK})
	for _, d := range docsOf(plain) {
		if group[d] == "42" {
			t.Fatalf("the unfiltered top %d already holds group 42 (%s): the test proves nothing", topK, d)
		}
	}
	q := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus haul out", "top_k": topK, "filter": eq("metadata.group", "42")})
	if len(q.Chunks) != topK {
		t.Fatalf("the 1%% filter returned %d chunks, want top_k = %d", len(q.Chunks), topK)
	}
	for _, c := range q.Chunks {
		if group[c.DocumentID] != "42" {
			t.Errorf("chunk of %s (group %s) passed the filter", c.DocumentID, group[c.DocumentID])
		}
	}
}

// TestQueryFilterIsolation: a filter selects among the querying owner's
// documents only; naming another owner's documents finds nothing.
func TestQueryFilterIsolation(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	// Every owner gets a document labelled the same way.
	labelled := map[string]string{}
	for _, o := range []struct{ key, owner string }{
		{s.a.key, s.a.projectID}, {s.a.key, s.a.customers[0]}, {s.a.key, s.a.customers[1]},
		{s.b.key, s.b.projectID}, {s.b.key, s.b.customers[0]},
	} {
		labelled[o.owner] = s.indexed(t, o.key, o.owner, "shared label", seedText(s.wordOf[o.owner])+" The quarterly report again.", map[string]string{"dept": "legal"})
	}
	others := []string{s.docA, s.docA2, s.docB, s.docB1, labelled[s.a.projectID], labelled[s.a.customers[1]], labelled[s.b.projectID], labelled[s.b.customers[0]]}
	cus := s.a.customers[0]
	for name, filter := range map[string]any{
		"other owners' ids": in("document_id", others...),
		"shared metadata":   eq("metadata.dept", "legal"),
		"either":            any_(in("document_id", others...), eq("metadata.dept", "legal")),
	} {
		q := s.query(t, s.a.key, "/query/customer", map[string]any{"customer_id": cus, "query": "quarterly report codeword", "top_k": 50, "filter": filter})
		for _, d := range docsOf(q) {
			if d != labelled[cus] && d != s.docA1 {
				t.Errorf("%s: customer %s's query returned document %s of another owner", name, cus, d)
			}
		}
	}
	// The project's own query does not reach its customers' documents.
	q := s.query(t, s.a.key, "/query/project", map[string]any{"project_id": s.a.projectID, "query": "quarterly report codeword", "top_k": 50, "filter": in("document_id", s.docA1, labelled[cus])})
	if len(q.Chunks) != 0 {
		t.Errorf("project A's query reached its customer's documents: %v", docsOf(q))
	}
}

// TestQueryFilterStream: a streamed query applies the filter to the chunks
// it sends and answers from them.
func TestQueryFilterStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key, cus := e.a.key, e.a.customers[0]
	legal := e.indexed(t, key, cus, "legal", "The walrus policy of the legal team covers ice floes.", map[string]string{"dept": "legal"})
	e.indexed(t, key, cus, "sales", "The walrus policy of the sales team covers ice floes too.", map[string]string{"dept": "sales"})
	body := jsonBytes(map[string]any{"customer_id": cus, "query": "walrus policy", "stream": true, "filter": eq("metadata.dept", "legal")})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.base+"/query/customer", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	events := map[string][]string{}
	var event string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			events[event] = append(events[event], strings.TrimPrefix(line, "data: "))
		}
	}
	if len(events["chunks"]) != 1 || len(events["done"]) != 1 {
		t.Fatalf("events %v: want one chunks and one done", events)
	}
	for _, ev := range []string{"chunks", "done"} {
		var got apiQuery
		if err := json.Unmarshal([]byte(events[ev][0]), &got); err != nil {
			t.Fatal(err)
		}
		if docs := docsOf(got); !slices.Equal(docs, []string{legal}) {
			t.Errorf("%s event holds documents %v, want only %s", ev, docs, legal)
		}
	}
}
