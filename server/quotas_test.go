package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/drivetest"
)

// Finding 11: nothing bounded what one project keeps. Each quota is
// tried through the API: the request over it is refused with a message
// naming the quota, the usage and what to do, changes nothing, and the
// room comes back as the quota says it does; the other project is not
// touched.

func withQuotas(customers, documents int, storedBytes int64, sessions int) func(*envOptions) {
	return func(o *envOptions) {
		o.cfg.MaxCustomersPerProject, o.cfg.MaxDocumentsPerProject = customers, documents
		o.cfg.MaxStoredBytesPerProject, o.cfg.MaxSessionsPerProject = storedBytes, sessions
	}
}

// documentsOf lists owner's documents through the API.
func (e *env) documentsOf(t *testing.T, key, owner string) []apiDocument {
	t.Helper()
	return decodeAs[struct {
		Documents []apiDocument `json:"documents"`
	}](t, e.get(t, "/documents?owner_id="+url.QueryEscape(owner), key)).Documents
}

// newSessionOf creates an upload session of project tn for owner (its
// project, or one of its customers) and returns its token.
func (e *env) newSessionOf(t *testing.T, tn tenant, owner string) response {
	t.Helper()
	body := map[string]any{"project_id": tn.projectID, "services": []string{"all"},
		"success_url": "https://app.example/done", "cancel_url": "https://app.example/cancel"}
	path := "/session/single-tenant"
	if owner != tn.projectID {
		body["customer_id"], path = owner, "/session/multi-tenant"
	}
	return e.postJSON(t, path, tn.key, body)
}

func sessionToken(t *testing.T, e *env, r response) string {
	t.Helper()
	return strings.TrimPrefix(decodeAs[apiSession](t, r).URL, e.base+"/s/")
}

func (e *env) sessionUploadFile(t *testing.T, token, name string, content []byte) response {
	t.Helper()
	body, ct := multipartBody(t, filePart(name, content))
	return e.do(t, http.MethodPost, "/s/"+token+"/upload", "", ct, bytes.NewReader(body))
}

func TestCustomerQuota(t *testing.T) {
	e := newEnv(t, withQuotas(3, 0, 0, 0)) // A has two customers, B one
	if r := e.postJSON(t, "/customer/create", e.a.key, map[string]any{"project_id": e.a.projectID, "name": "third"}); r.status != http.StatusOK {
		t.Fatalf("the third customer: %s", r)
	}
	e.unchanged(t, func() {
		r := e.postJSON(t, "/customer/create", e.a.key, map[string]any{"project_id": e.a.projectID, "name": "fourth"})
		wantError(t, r, http.StatusForbidden, "project "+e.a.projectID+" has 3 customers", "its quota of 3",
			"customers are not deleted", "higher quota from the server's operator", "--max-customers-per-project")
		if r.header.Get("Retry-After") != "" {
			t.Errorf("Retry-After %q on a quota waiting does not lift", r.header.Get("Retry-After"))
		}
	})
	if r := e.postJSON(t, "/customer/create", e.b.key, map[string]any{"project_id": e.b.projectID, "name": "B's second"}); r.status != http.StatusOK {
		t.Fatalf("another project's customer: %s", r)
	}
}

// The documents quota counts the project's documents and its customers',
// whatever their status, however they came: API uploads of text and
// files, and session uploads.
func TestDocumentQuota(t *testing.T) {
	e := newEnv(t, withQuotas(0, 3, 0, 0))
	own := e.uploadText(t, e.a.key, e.a.projectID, "own", "The quartermaster orders mooring lines every spring.")
	e.uploadText(t, e.a.key, e.a.customers[0], "customer's", "The lighthouse keeper logs the fog signal hours.")
	token := sessionToken(t, e, e.newSessionOf(t, e.a, e.a.customers[1]))
	up := decodeAs[apiUpload](t, e.sessionUploadFile(t, token, "ferry.txt", []byte("The ferry timetable changes in summer.")))
	e.waitJob(t, e.a.key, up.JobID) // its end would change the store below

	want := []string{"project " + e.a.projectID + " keeps 3 documents", "its quota of 3", "DELETE /documents/{document_id}", "--max-documents-per-project"}
	e.unchanged(t, func() {
		wantError(t, e.postJSON(t, "/upload/text", e.a.key, map[string]any{"owner_id": e.a.customers[0], "text": "one too many"}),
			http.StatusForbidden, want...)
		wantError(t, e.uploadFile(t, e.a.key, filePart("late.txt", []byte("one too many")), dataPart(map[string]any{"owner_id": e.a.projectID})),
			http.StatusForbidden, want...)
		wantError(t, e.sessionUploadFile(t, token, "late.txt", []byte("one too many")), http.StatusForbidden, want...)
	})
	for _, owner := range []string{e.a.projectID, e.a.customers[0], e.a.customers[1]} {
		if docs := e.documentsOf(t, e.a.key, owner); len(docs) != 1 {
			t.Fatalf("owner %s has %d documents after the refusals, want its one", owner, len(docs))
		}
	}
	e.uploadText(t, e.b.key, e.b.projectID, "B's", "Another project's quota is its own.")

	// A delete makes room.
	if r := e.do(t, http.MethodDelete, "/documents/"+own, e.a.key, "", nil); r.status != http.StatusOK {
		t.Fatalf("delete: %s", r)
	}
	e.uploadText(t, e.a.key, e.a.projectID, "again", "Room was made by a delete.")
}

// Uploads at once at the quota's edge: exactly as many get in as it
// leaves room for, though all of them passed the check made before their
// bodies were read.
func TestDocumentQuotaAtOnce(t *testing.T) {
	e := newEnv(t, withQuotas(0, 2, 0, 0))
	const uploads = 8
	statuses := make([]int, uploads)
	var wg sync.WaitGroup
	for i := range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.postJSON(t, "/upload/text", e.a.key, map[string]any{"owner_id": e.a.customers[i%2], "text": fmt.Sprint("upload number ", i)})
			statuses[i] = r.status
			if r.status != http.StatusOK {
				wantError(t, r, http.StatusForbidden, "its quota of 2")
			}
		}()
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		if s == http.StatusOK {
			ok++
		}
	}
	docs := len(e.documentsOf(t, e.a.key, e.a.customers[0])) + len(e.documentsOf(t, e.a.key, e.a.customers[1]))
	if ok != 2 || docs != 2 {
		t.Fatalf("%d uploads at once with room for 2: %d answered 200 (%v), %d documents kept", uploads, ok, statuses, docs)
	}
}

// The storage quota counts the bytes of every document, a content
// uploaded twice twice; an upload past it is refused before its file is
// written, and a delete gives its bytes back.
func TestStorageQuota(t *testing.T) {
	const quota = 200 << 10
	e := newEnv(t, withMaxFileBytes(1<<20), withQuotas(0, 0, quota, 0))
	owner := e.a.customers[0]
	text := func(n int, word string) []byte {
		phrase := word + " and the harbour master's ledger. "
		return []byte(strings.Repeat(phrase, n/len(phrase)+1)[:n])
	}
	first := decodeAs[apiUpload](t, e.uploadFile(t, e.a.key, filePart("first.txt", text(150<<10, "mooring lines")), dataPart(map[string]any{"owner_id": owner})))
	e.waitJob(t, e.a.key, first.JobID)
	files := e.storedFiles(t, owner)

	e.unchanged(t, func() {
		for _, content := range [][]byte{text(100<<10, "fog signal"), text(150<<10, "mooring lines")} {
			r := e.uploadFile(t, e.a.key, filePart("second.txt", content), dataPart(map[string]any{"owner_id": owner}))
			wantError(t, r, http.StatusForbidden, "the documents of project "+e.a.projectID+" take 150 KiB of its storage quota of 200 KiB",
				fmt.Sprintf("this one would take %s more", map[int]string{100 << 10: "100 KiB", 150 << 10: "150 KiB"}[len(content)]),
				"DELETE /documents/{document_id}", "--max-stored-bytes-per-project")
		}
	})
	if n := e.storedFiles(t, owner); n != files {
		t.Fatalf("%d originals kept after refused uploads, want %d", n, files)
	}
	// Up to the quota exactly fits.
	if r := e.uploadFile(t, e.a.key, filePart("third.txt", text(50<<10, "buoys")), dataPart(map[string]any{"owner_id": e.a.projectID})); r.status != http.StatusOK {
		t.Fatalf("an upload that takes the quota exactly: %s", r)
	}
	// At the quota, an upload is refused before its body is read.
	wantError(t, e.postJSON(t, "/upload/text", e.a.key, map[string]any{"owner_id": owner, "text": "x"}),
		http.StatusForbidden, "take 200 KiB of its storage quota of 200 KiB")
	if r := e.do(t, http.MethodDelete, "/documents/"+first.DocumentID, e.a.key, "", nil); r.status != http.StatusOK {
		t.Fatalf("delete: %s", r)
	}
	if r := e.uploadFile(t, e.a.key, filePart("second.txt", text(100<<10, "fog signal")), dataPart(map[string]any{"owner_id": owner})); r.status != http.StatusOK {
		t.Fatalf("an upload once a delete made room: %s", r)
	}
}

// Sessions alive are bounded: one over the quota is a 429 whose
// Retry-After is the time until the first of them expires; a session
// closed by its page, or expired, frees its room.
func TestSessionQuota(t *testing.T) {
	e := newEnv(t, withQuotas(0, 0, 0, 2))
	first := sessionToken(t, e, e.newSessionOf(t, e.a, e.a.projectID))
	e.clock.Advance(10 * time.Minute)
	if r := e.newSessionOf(t, e.a, e.a.customers[0]); r.status != http.StatusOK {
		t.Fatalf("the second session: %s", r)
	}
	e.unchanged(t, func() {
		r := e.newSessionOf(t, e.a, e.a.customers[1])
		wantError(t, r, http.StatusTooManyRequests, "project "+e.a.projectID+" has 2 upload sessions alive", "its quota of 2",
			"when it expires, 1 hour after it was made", "Done or Cancel", "the first of them expires at")
		wait, err := strconv.Atoi(r.header.Get("Retry-After"))
		if err != nil || wait < 49*60 || wait > 50*60 {
			t.Errorf("Retry-After %q, want the 50 minutes until the first session expires", r.header.Get("Retry-After"))
		}
	})
	if r := e.newSessionOf(t, e.b, e.b.projectID); r.status != http.StatusOK {
		t.Fatalf("another project's session: %s", r)
	}
	if r := e.do(t, http.MethodPost, "/s/"+first+"/close?how=done", "", "", nil); r.status != http.StatusNoContent {
		t.Fatalf("close: %s", r)
	}
	third := e.newSessionOf(t, e.a, e.a.customers[1])
	if third.status != http.StatusOK {
		t.Fatalf("a session once another was closed: %s", third)
	}
	wantError(t, e.newSessionOf(t, e.a, e.a.projectID), http.StatusTooManyRequests, "its quota of 2")
	e.clock.Advance(time.Hour)
	if r := e.newSessionOf(t, e.a, e.a.projectID); r.status != http.StatusOK {
		t.Fatalf("a session once the others expired: %s", r)
	}
}

// Drive imports count as any upload: one over the documents quota is
// refused before anything is downloaded.
func TestDriveImportsCountAgainstTheDocumentsQuota(t *testing.T) {
	e, g := newDriveEnv(t, withQuotas(0, 1, 0, 0))
	a := g.AddFile(drivetest.File{Name: "a.txt", MimeType: "text/plain", Content: []byte("anchors and chains")})
	b := g.AddFile(drivetest.File{Name: "b.txt", MimeType: "text/plain", Content: []byte("buoys and beacons")})
	s := e.newDriveSession(t, "google_drive")
	v := newVisitor(t)
	v.connect(s)
	e.waitJob(t, e.a.key, decodeAs[apiUpload](t, v.importFile(s, a.ID)).JobID)
	e.unchanged(t, func() {
		wantError(t, v.importFile(s, b.ID), http.StatusForbidden, "keeps 1 documents", "its quota of 1")
	})
	if n, _ := g.Downloads(b.ID); n != 0 {
		t.Errorf("the refused file was downloaded %d times", n)
	}
}

// A session that ended is removed from the store an hour later; its link
// then says that it may have ended, not only that it is not valid.
func TestSweptSessionLink(t *testing.T) {
	e := newEnv(t)
	token := sessionToken(t, e, e.newSessionOf(t, e.a, e.a.projectID))
	e.clock.Advance(time.Hour)
	wantError(t, e.get(t, "/s/"+token+"/jobs", ""), http.StatusGone, "expired")
	e.clock.Advance(time.Hour)
	if n, err := e.store.SweepSessions(); err != nil || n != 1 {
		t.Fatalf("SweepSessions = %d, %v; want the one ended an hour ago", n, err)
	}
	wantError(t, e.get(t, "/s/"+token+"/jobs", ""), http.StatusNotFound, "not valid, or it ended a while ago")
}
