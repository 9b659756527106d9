package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
)

// apiExternalDoc is a document with the field this file is about.
type apiExternalDoc struct {
	apiDocument
	ExternalID string `json:"external_id"`
	Error      string `json:"error"`
}

// byExternalID is GET /documents?owner_id=&external_id=.
func (e *env) byExternalID(t *testing.T, key, owner, ext string) []apiExternalDoc {
	t.Helper()
	return decodeAs[struct {
		Documents []apiExternalDoc `json:"documents"`
	}](t, e.get(t, "/documents?owner_id="+owner+"&external_id="+url.QueryEscape(ext), key)).Documents
}

// versionText is a document of several chunks, every one about walruses
// and marked with its version's word.
func versionText(word string) string {
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "Section %d of the %s field guide. The walrus hauls out on sea ice to rest between dives, "+
			"and the %s edition describes colonies, tusks, whiskers and the clams they feed on in shallow water. "+
			"Observers count animals from the shore and note the weather, the ice and the tide. %s.\n\n", i, word, word, strings.Repeat("Field notes continue here ", 6))
	}
	return b.String()
}

func TestExternalIDBad(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	cus := s.a.customers[0]
	up := func(ext string) map[string]any {
		return map[string]any{"owner_id": cus, "text": "some text", "external_id": ext}
	}
	runBad(t, s.env, badCases{
		{name: "too long", body: up(strings.Repeat("x", 257)), status: 400, want: []string{"external_id", "257 characters", "limit of 256"}},
		{name: "space", body: up("my doc"), status: 400, want: []string{"external_id", "printable ASCII without spaces", "character 3"}},
		{name: "non-ASCII", body: up("résumé"), status: 400, want: []string{"external_id", "printable ASCII", "character 2"}},
		{name: "control", body: up("a\tb"), status: 400, want: []string{"external_id", "printable ASCII"}},
		{name: "not a string", body: map[string]any{"owner_id": cus, "text": "x", "external_id": 12}, status: 400, want: []string{"external_id", "must be a string"}},
	}.defaults(s.a.key, "/upload/text"))
	runBad(t, s.env, badCases{
		{name: "lookup empty", method: http.MethodGet, path: "/documents?owner_id=" + cus + "&external_id=", status: 400, want: []string{"external_id is empty"}},
		{name: "lookup space", method: http.MethodGet, path: "/documents?owner_id=" + cus + "&external_id=a%20b", status: 400, want: []string{"external_id", "without spaces"}},
		{name: "lookup other project", method: http.MethodGet, path: "/documents?owner_id=" + s.b.customers[0] + "&external_id=x", status: 404},
	}.defaults(s.a.key, ""))
	// The data part of /upload/file is checked the same way.
	s.unchanged(t, func() {
		r := s.uploadFile(t, s.a.key, filePart("a.txt", []byte("some text")), dataPart(map[string]any{"owner_id": cus, "external_id": "a b"}))
		wantError(t, r, 400, "external_id", "without spaces")
	})
}

// TestExternalIDReplace: a second upload with the same external_id
// replaces the first once indexed: queries find only the new version, the
// old document and its file are gone, the lookup finds the new one, and
// the project's webhook hears of the replacement job.
func TestExternalIDReplace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMaxTextBytes(64<<10))
	key, cus := e.a.key, e.a.customers[0]
	hook := decodeAs[apiWebhook](t, e.postJSON(t, "/webhooks", key, map[string]any{"url": "http://127.0.0.1:9/hooks"}))

	v1 := e.uploadWith(t, key, cus, "guide", versionText("spring"), map[string]string{"v": "1"}, "guides/walrus")
	if j := e.waitJob(t, key, v1.JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("v1: %s %s", j.Status, j.Error)
	}
	if got := e.byExternalID(t, key, cus, "guides/walrus"); len(got) != 1 || got[0].DocumentID != v1.DocumentID || got[0].ExternalID != "guides/walrus" {
		t.Fatalf("lookup after v1: %+v", got)
	}
	v2 := e.uploadWith(t, key, cus, "guide", versionText("autumn"), map[string]string{"v": "2"}, "guides/walrus")
	j2 := e.waitJob(t, key, v2.JobID)
	if j2.Status != store.StatusSucceeded {
		t.Fatalf("v2: %s %s", j2.Status, j2.Error)
	}

	q := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus field guide", "top_k": 50})
	if docs := docsOf(q); len(docs) != 1 || docs[0] != v2.DocumentID || len(q.Chunks) != j2.Chunks {
		t.Errorf("after the replacement a query finds documents %v in %d chunks, want only %s's %d", docs, len(q.Chunks), v2.DocumentID, j2.Chunks)
	}
	wantError(t, e.get(t, "/documents/"+v1.DocumentID, key), http.StatusNotFound)
	got := e.byExternalID(t, key, cus, "guides/walrus")
	if len(got) != 1 || got[0].DocumentID != v2.DocumentID || got[0].ExternalID != "guides/walrus" || got[0].Metadata["v"] != "2" {
		t.Errorf("lookup after v2: %+v", got)
	}
	doc := decodeAs[apiExternalDoc](t, e.get(t, "/documents/"+v2.DocumentID, key))
	if doc.ExternalID != "guides/walrus" {
		t.Errorf("GET /documents/{id} shows external_id %q", doc.ExternalID)
	}
	list := decodeAs[struct {
		Documents []apiExternalDoc `json:"documents"`
	}](t, e.get(t, "/documents?owner_id="+cus, key))
	if len(list.Documents) != 1 {
		t.Errorf("the owner lists %d documents, want the one version", len(list.Documents))
	}
	if n := e.storedFiles(t, cus); n != 1 {
		t.Errorf("%d original files kept, want only the new version's", n)
	}
	// A filter on the old version's metadata finds nothing.
	if q := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus", "filter": eq("metadata.v", "1")}); len(q.Chunks) != 0 {
		t.Errorf("the old version's metadata still filters in %d chunks", len(q.Chunks))
	}

	ds := decodeAs[struct {
		Deliveries []struct {
			Event string `json:"event"`
			JobID string `json:"job_id"`
		} `json:"deliveries"`
	}](t, e.get(t, "/webhooks/"+hook.WebhookID+"/deliveries", key))
	heard := false
	for _, d := range ds.Deliveries {
		heard = heard || (d.JobID == v2.JobID && d.Event == "job.succeeded")
	}
	if !heard {
		t.Errorf("no job.succeeded delivery for the replacement job: %+v", ds.Deliveries)
	}

	// Deleting the document frees the external id for a new upload.
	if r := e.do(t, http.MethodDelete, "/documents/"+v2.DocumentID, key, "", nil); r.status != http.StatusOK {
		t.Fatal(r)
	}
	if got := e.byExternalID(t, key, cus, "guides/walrus"); len(got) != 0 {
		t.Errorf("a deleted document is still found by its external id: %+v", got)
	}
	// (through /upload/file, whose data part takes external_id too)
	v3 := decodeAs[apiUpload](t, e.uploadFile(t, key, filePart("note.txt", []byte("A short note.")), dataPart(map[string]any{"owner_id": cus, "external_id": "guides/walrus"})))
	if got := e.byExternalID(t, key, cus, "guides/walrus"); len(got) != 1 || got[0].DocumentID != v3.DocumentID {
		t.Errorf("the freed external id's next upload: lookup %+v, want %s", got, v3.DocumentID)
	}
	if j := e.waitJob(t, key, v3.JobID); j.Status != store.StatusSucceeded {
		t.Errorf("the file upload under the freed external id: %s %s", j.Status, j.Error)
	}
}

// refusingEmbedder fails, for good, to embed any text holding poison.
type refusingEmbedder struct {
	llm.Embedder
	poison string
}

func (r refusingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, r.poison) {
			return nil, errors.New("the model cannot embed this text")
		}
	}
	return r.Embedder.Embed(ctx, texts)
}

// TestExternalIDFailedReplacementKeepsOld: a replacement whose job fails
// leaves the old version searchable and found by the external id; the
// failed upload stays as a FAILED document that says why.
func TestExternalIDFailedReplacementKeepsOld(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmbedder(refusingEmbedder{llm.NewBuiltin(), "POISON"}), withMaxTextBytes(64<<10))
	key, cus := e.a.key, e.a.customers[0]
	v1 := e.uploadWith(t, key, cus, "guide", versionText("spring"), nil, "guide")
	j1 := e.waitJob(t, key, v1.JobID)
	if j1.Status != store.StatusSucceeded {
		t.Fatalf("v1: %s %s", j1.Status, j1.Error)
	}
	v2 := e.uploadWith(t, key, cus, "guide", versionText("POISON"), nil, "guide")
	if j := e.waitJob(t, key, v2.JobID); j.Status != store.StatusFailed {
		t.Fatalf("the poisoned replacement ended %s", j.Status)
	}
	q := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus field guide", "top_k": 50})
	if docs := docsOf(q); len(docs) != 1 || docs[0] != v1.DocumentID || len(q.Chunks) != j1.Chunks {
		t.Errorf("after a failed replacement a query finds %v in %d chunks, want the old version's %d", docs, len(q.Chunks), j1.Chunks)
	}
	if got := e.byExternalID(t, key, cus, "guide"); len(got) != 1 || got[0].DocumentID != v1.DocumentID {
		t.Errorf("lookup after a failed replacement: %+v, want the old version", got)
	}
	failed := decodeAs[apiExternalDoc](t, e.get(t, "/documents/"+v2.DocumentID, key))
	if failed.Status != store.StatusFailed || failed.Error == "" || failed.ExternalID != "guide" {
		t.Errorf("the failed upload reads %+v", failed)
	}
}

// TestExternalIDRacingUploads: of two replacements, the one uploaded later
// wins even when the earlier one's job ends last; the earlier one fails
// and says why.
func TestExternalIDRacingUploads(t *testing.T) {
	t.Parallel()
	gate := newGateEmbedder()
	e := newEnv(t, withWorkers(2), withEmbedder(gate), withMaxTextBytes(64<<10))
	key, cus := e.a.key, e.a.customers[0]
	first := e.uploadWith(t, key, cus, "guide", versionText("winter"), nil, "guide")
	if j := e.waitJob(t, key, first.JobID); j.Status != store.StatusSucceeded {
		t.Fatal(j)
	}

	gate.armed.Store(true)
	older := e.uploadWith(t, key, cus, "guide", versionText("spring"), nil, "guide")
	gate.waitEntered(t) // the older upload's job is held in the embedder
	newer := e.uploadWith(t, key, cus, "guide", versionText("summer"), nil, "guide")
	jn := e.waitJob(t, key, newer.JobID)
	if jn.Status != store.StatusSucceeded {
		t.Fatalf("newer: %s %s", jn.Status, jn.Error)
	}
	close(gate.release)
	jo := e.waitJob(t, key, older.JobID)
	if jo.Status != store.StatusFailed || !strings.Contains(jo.Error, "newer upload with the same external_id") {
		t.Errorf("the older upload finishing last ended %s %q, want FAILED saying a newer upload won", jo.Status, jo.Error)
	}
	if got := e.byExternalID(t, key, cus, "guide"); len(got) != 1 || got[0].DocumentID != newer.DocumentID {
		t.Errorf("lookup: %+v, want the newer upload %s", got, newer.DocumentID)
	}
	q := e.query(t, key, "/query/customer", map[string]any{"customer_id": cus, "query": "walrus field guide", "top_k": 50})
	if docs := docsOf(q); len(docs) != 1 || docs[0] != newer.DocumentID || len(q.Chunks) != jn.Chunks {
		t.Errorf("a query finds %v in %d chunks, want only the newer upload's %d", docs, len(q.Chunks), jn.Chunks)
	}
	wantError(t, e.get(t, "/documents/"+first.DocumentID, key), http.StatusNotFound)
}

// TestExternalIDFirstUploadOvertaken: the first upload of an external_id
// holds it at once, and a later one that finishes first takes it over,
// removing the first: the first's job then fails saying it was replaced,
// not that someone deleted it.
func TestExternalIDFirstUploadOvertaken(t *testing.T) {
	t.Parallel()
	gate := newGateEmbedder()
	e := newEnv(t, withWorkers(2), withEmbedder(gate), withMaxTextBytes(64<<10))
	key, cus := e.a.key, e.a.customers[0]
	gate.armed.Store(true)
	first := e.uploadWith(t, key, cus, "guide", versionText("spring"), nil, "guide")
	gate.waitEntered(t)
	second := e.uploadWith(t, key, cus, "guide", versionText("summer"), nil, "guide")
	if j := e.waitJob(t, key, second.JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("second: %s %s", j.Status, j.Error)
	}
	close(gate.release)
	if j := e.waitJob(t, key, first.JobID); j.Status != store.StatusFailed || !strings.Contains(j.Error, "newer upload with the same external_id") {
		t.Errorf("the first upload, overtaken, ended %s %q, want FAILED saying a newer upload replaced it", j.Status, j.Error)
	}
}

// TestExternalIDIsolation: external ids are per owner: the same one in two
// owners names two documents, replacing one leaves the other, and a key
// cannot look up another project's.
func TestExternalIDIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.a, e.b
	owners := []struct{ key, owner string }{{a.key, a.customers[0]}, {a.key, a.customers[1]}, {a.key, a.projectID}, {b.key, b.customers[0]}}
	docs := map[string]string{}
	for _, o := range owners {
		up := e.uploadWith(t, o.key, o.owner, "note", "The walrus note of "+o.owner, nil, "note")
		if j := e.waitJob(t, o.key, up.JobID); j.Status != store.StatusSucceeded {
			t.Fatal(j)
		}
		docs[o.owner] = up.DocumentID
	}
	repl := e.uploadWith(t, a.key, a.customers[0], "note", "The new walrus note", nil, "note")
	if j := e.waitJob(t, a.key, repl.JobID); j.Status != store.StatusSucceeded {
		t.Fatal(j)
	}
	for _, o := range owners[1:] {
		if got := e.byExternalID(t, o.key, o.owner, "note"); len(got) != 1 || got[0].DocumentID != docs[o.owner] {
			t.Errorf("%s's note after another owner's replacement: %+v", o.owner, got)
		}
		decodeAs[apiExternalDoc](t, e.get(t, "/documents/"+docs[o.owner], o.key))
	}
	wantError(t, e.get(t, "/documents?owner_id="+a.customers[1]+"&external_id=note", b.key), http.StatusNotFound)
}

// TestExternalIDReplacementIsAtomic queries in a loop, from several
// clients, while a replacement is held in the embedder and then commits:
// every answer holds all the chunks of exactly one version, the old or the
// new, never both and never neither; and once the job has ended, only the
// new.
func TestExternalIDReplacementIsAtomic(t *testing.T) {
	t.Parallel()
	gate := newGateEmbedder()
	e := newEnv(t, withWorkers(1), withEmbedder(gate), withMaxTextBytes(64<<10))
	key, cus := e.a.key, e.a.customers[0]
	v1 := e.uploadWith(t, key, cus, "guide", versionText("spring"), nil, "guide")
	j1 := e.waitJob(t, key, v1.JobID)
	if j1.Status != store.StatusSucceeded || j1.Chunks < 3 {
		t.Fatalf("v1: %+v, want several chunks", j1)
	}

	var v2ID atomic.Value // the new version's document id, once known
	v2ID.Store("")
	var seenNew atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	body := jsonBytes(map[string]any{"customer_id": cus, "query": "walrus field guide", "top_k": 50})
	ask := func() (apiQuery, error) {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/query/customer", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			return apiQuery{}, err
		}
		defer resp.Body.Close()
		var q apiQuery
		if resp.StatusCode != http.StatusOK {
			return q, fmt.Errorf("status %d", resp.StatusCode)
		}
		return q, json.NewDecoder(resp.Body).Decode(&q)
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				q, err := ask()
				if err != nil {
					t.Errorf("query: %v", err)
					return
				}
				docs := docsOf(q)
				switch {
				case len(docs) != 1:
					t.Errorf("a query found documents %v: both versions or neither", docs)
					return
				case docs[0] == v1.DocumentID && len(q.Chunks) != j1.Chunks:
					t.Errorf("a query found %d of the old version's %d chunks", len(q.Chunks), j1.Chunks)
					return
				case docs[0] != v1.DocumentID && docs[0] != v2ID.Load().(string):
					t.Errorf("a query found document %s, of neither version", docs[0])
					return
				case docs[0] != v1.DocumentID:
					seenNew.Add(1)
				}
			}
		}()
	}

	gate.armed.Store(true)
	v2 := e.uploadWith(t, key, cus, "guide", versionText("autumn"), nil, "guide")
	v2ID.Store(v2.DocumentID)
	gate.waitEntered(t)
	close(gate.release)
	j2 := e.waitJob(t, key, v2.JobID)
	close(stop)
	wg.Wait()
	if j2.Status != store.StatusSucceeded {
		t.Fatalf("v2: %s %s", j2.Status, j2.Error)
	}
	q, err := ask()
	if err != nil {
		t.Fatal(err)
	}
	if docs := docsOf(q); len(docs) != 1 || docs[0] != v2.DocumentID || len(q.Chunks) != j2.Chunks {
		t.Errorf("after the replacement's job a query finds %v in %d chunks, want the new version's %d", docs, len(q.Chunks), j2.Chunks)
	}
	t.Logf("%d queries saw the new version before the job ended", seenNew.Load())
}
