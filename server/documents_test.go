package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"
	"github.com/docsift/docsift/subpage"

	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// sharedPDFDir holds the real PDFs shared by the project's tests; they are
// read in place, never copied into the repository.
const sharedPDFDir = "../../shared/data/pdf"

// realPDFs are the shared PDFs, each with a phrase found on exactly one
// known page and a query a reader would type to find it (the phrase itself
// when it says enough; "not treated specially and do not" is nearly all
// stop words).
var realPDFs = []struct {
	name   string
	phrase string
	page   int
	query  string
}{
	{"libtasn1.pdf", "array is a vector created by", 12, ""},
	{"shared-mime-info-spec.pdf", "that the type is also sometimes", 5, ""},
	{"bashref.pdf", "not treated specially and do not", 70, "read: delimiter characters are not treated specially until nchars characters are read"},
	{"gnuplot.pdf", "effect of executing the basic command", 100, ""},
}

type apiSubpage struct {
	SubpageURL string    `json:"subpage_url"`
	FirstPage  int       `json:"first_page"`
	LastPage   int       `json:"last_page"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// fetch GETs an absolute URL without a key.
func (e *env) fetch(t *testing.T, url string) response {
	t.Helper()
	return e.do(t, http.MethodGet, strings.TrimPrefix(url, e.base), "", "", nil)
}

// uploadPDF uploads data as name for owner and waits for its job.
func (e *env) uploadPDF(t *testing.T, key, owner, name string, data []byte) apiJob {
	t.Helper()
	r := e.uploadFile(t, key, dataPart(map[string]string{"owner_id": owner}), filePart(name, data))
	if r.status != http.StatusOK {
		t.Fatalf("upload %s: %s", name, r)
	}
	return e.waitJob(t, key, decodeAs[apiUpload](t, r).JobID)
}

func words(s string) []string { return strings.Fields(strings.ToLower(s)) }

func TestRealPDFsQueryByPageAndSubpage(t *testing.T) {
	if _, err := os.Stat(sharedPDFDir); err != nil {
		t.Skipf("shared PDFs not found at %s (%v): run from a checkout with ../shared beside it", sharedPDFDir, err)
	}
	e := newEnv(t, withMaxFileBytes(8<<20))
	for _, c := range realPDFs {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(sharedPDFDir, c.name))
			if err != nil {
				t.Fatal(err)
			}
			owner := e.a.projectID
			if j := e.uploadPDF(t, e.a.key, owner, c.name, data); j.Status != store.StatusSucceeded {
				t.Fatalf("job ended %s: %s", j.Status, j.Error)
			}
			query := c.query
			if query == "" {
				query = c.phrase
			}
			q := e.query(t, e.a.key, "/query/project", map[string]any{"project_id": owner, "query": query, "top_k": 5})
			var hit *apiChunk
			for i, ch := range q.Chunks {
				if ch.Page != nil && *ch.Page == c.page && strings.Contains(strings.Join(words(ch.Text), " "), c.phrase) {
					hit = &q.Chunks[i]
					break
				}
			}
			if hit == nil {
				t.Fatalf("no chunk of page %d holding %q in the top 5: %+v", c.page, c.phrase, q.Chunks)
			}
			r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": hit.ChunkID, "owner_id": owner, "varience": 1})
			if r.status != http.StatusOK {
				t.Fatalf("subpage: %s", r)
			}
			sp := decodeAs[apiSubpage](t, r)
			if sp.FirstPage != c.page-1 || sp.LastPage != c.page+1 {
				t.Errorf("subpage pages %d–%d, want %d–%d", sp.FirstPage, sp.LastPage, c.page-1, c.page+1)
			}
			got := e.fetch(t, sp.SubpageURL)
			if got.status != http.StatusOK || got.header.Get("Content-Type") != "application/pdf" {
				t.Fatalf("GET subpage: %d %s", got.status, got.header.Get("Content-Type"))
			}
			doc, err := pdf.Extract(context.Background(), got.body)
			if err != nil {
				t.Fatalf("subpage is not a readable PDF: %v", err)
			}
			if len(doc.Pages) != 3 {
				t.Fatalf("subpage has %d pages, want 3", len(doc.Pages))
			}
			middle := " " + strings.Join(words(doc.Pages[1].Text), " ") + " "
			if !strings.Contains(middle, c.phrase) {
				t.Errorf("the subpage's middle page lacks %q", c.phrase)
			}
			// The chunk's text is the middle page's: nearly all its words
			// are there (cleaning of a 3-page excerpt may differ on a
			// running header or two).
			missing := 0
			for _, w := range words(hit.Text) {
				if !strings.Contains(middle, " "+w+" ") {
					missing++
				}
			}
			if n := len(words(hit.Text)); missing > n/10 {
				t.Errorf("%d of the chunk's %d words are not on the subpage's middle page", missing, n)
			}
		})
	}
}

// numberedPDF is a PDF of n pages whose page i says which page it is.
func numberedPDF(n int) []byte {
	pages := make([]string, n)
	for i := range pages {
		pages[i] = "This is page " + pageWord(i+1) + " of the numbered test document. It talks about " + pageWord(i+1) + " things only."
	}
	return testpdf.Pages(pages)
}

func pageWord(n int) string {
	return []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}[n]
}

func TestSubpageClampingReuseExpiryAndErrors(t *testing.T) {
	e := newEnv(t, withMaxFileBytes(1<<20))
	owner := e.a.customers[0]
	if j := e.uploadPDF(t, e.a.key, owner, "numbered.pdf", numberedPDF(5)); j.Status != store.StatusSucceeded {
		t.Fatalf("job: %+v", j)
	}
	chunkOn := func(word string, page int) string {
		q := e.query(t, e.a.key, "/query/customer", map[string]any{"customer_id": owner, "query": word + " things", "top_k": 5})
		for _, c := range q.Chunks {
			if c.Page != nil && *c.Page == page {
				return c.ChunkID
			}
		}
		t.Fatalf("no chunk of page %d: %+v", page, q.Chunks)
		return ""
	}
	first, last := chunkOn("one", 1), chunkOn("five", 5)
	for _, c := range []struct {
		chunk       string
		varience    any
		first, last int
	}{
		{first, 2, 1, 3},  // clamped at the start
		{last, 2.0, 3, 5}, // clamped at the end; 2.0 is a whole number
		{first, 0, 1, 1},  // the page alone
		{last, 50, 1, 5},  // the whole document
	} {
		r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": c.chunk, "owner_id": owner, "varience": c.varience})
		if r.status != http.StatusOK {
			t.Fatalf("varience %v: %s", c.varience, r)
		}
		sp := decodeAs[apiSubpage](t, r)
		pdfBytes := e.fetch(t, sp.SubpageURL).body
		n, err := pdf.PageCount(pdfBytes)
		if sp.FirstPage != c.first || sp.LastPage != c.last || err != nil || n != c.last-c.first+1 {
			t.Errorf("varience %v: pages %d–%d, PDF of %d pages (%v); want %d–%d", c.varience, sp.FirstPage, sp.LastPage, n, err, c.first, c.last)
		}
	}

	// The same chunk and varience reuse one file.
	a := decodeAs[apiSubpage](t, e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": first, "owner_id": owner, "varience": 1}))
	b := decodeAs[apiSubpage](t, e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": first, "owner_id": owner, "varience": 1.0}))
	if a.SubpageURL != b.SubpageURL {
		t.Errorf("same chunk and varience gave two URLs: %s, %s", a.SubpageURL, b.SubpageURL)
	}
	if id := strings.TrimSuffix(a.SubpageURL[strings.LastIndex(a.SubpageURL, "/")+1:], ".pdf"); len(id) < 40 {
		t.Errorf("subpage id %q is too short to be unguessable", id)
	}
	if r := e.fetch(t, a.SubpageURL); !strings.Contains(r.header.Get("Content-Disposition"), "numbered-pages-1-2.pdf") {
		t.Errorf("Content-Disposition = %q", r.header.Get("Content-Disposition"))
	}

	// A text chunk is not from a PDF.
	e.uploadText(t, e.a.key, owner, "notes.txt", "Plain notes about the zeppelin hangar.")
	q := e.query(t, e.a.key, "/query/customer", map[string]any{"customer_id": owner, "query": "zeppelin hangar", "top_k": 1})
	textChunk := q.Chunks[0].ChunkID

	e.unchanged(t, func() {
		for _, c := range []struct {
			body   map[string]any
			status int
			want   string
		}{
			{map[string]any{"chunk_id": first, "owner_id": owner}, 400, "varience is required"},
			{map[string]any{"chunk_id": first, "owner_id": owner, "varience": 2.5}, 400, "whole number"},
			{map[string]any{"chunk_id": first, "owner_id": owner, "varience": -1}, 400, "whole number"},
			{map[string]any{"chunk_id": first, "owner_id": owner, "varience": 51}, 400, "whole number"},
			{map[string]any{"chunk_id": first, "owner_id": owner, "varience": "1"}, 400, "varience"},
			{map[string]any{"chunk_id": first, "owner_id": owner, "variance": 1}, 400, `the interface spells it "varience"`},
			{map[string]any{"owner_id": owner, "varience": 1}, 400, "chunk_id is required"},
			{map[string]any{"chunk_id": first, "varience": 1}, 400, "owner_id is required"},
			{map[string]any{"chunk_id": textChunk, "owner_id": owner, "varience": 1}, 400, "not from a PDF"},
			{map[string]any{"chunk_id": "chk_nope-0001", "owner_id": owner, "varience": 1}, 404, "not found"},
			// Right chunk, wrong owner: the project itself, another customer.
			{map[string]any{"chunk_id": first, "owner_id": e.a.projectID, "varience": 1}, 404, "not found"},
			{map[string]any{"chunk_id": first, "owner_id": e.a.customers[1], "varience": 1}, 404, "not found"},
		} {
			wantError(t, e.postJSON(t, "/subpage", e.a.key, c.body), c.status, c.want)
		}
		// Another project's key reaches nothing.
		wantError(t, e.postJSON(t, "/subpage", e.b.key, map[string]any{"chunk_id": first, "owner_id": owner, "varience": 1}), 404)
		wantError(t, e.fetch(t, e.base+"/subpages/sub_guess.pdf"), 404)
	})

	// Viewers ask for ranges, and are told the length.
	req, err := http.NewRequest(http.MethodGet, a.SubpageURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=0-4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || string(head) != "%PDF-" || resp.Header.Get("Content-Type") != "application/pdf" {
		t.Errorf("range of a subpage: %s %q %q", resp.Status, head, resp.Header.Get("Content-Type"))
	}
	if r := e.fetch(t, a.SubpageURL); r.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
		t.Errorf("Content-Length %q of a %d-byte subpage", r.header.Get("Content-Length"), len(r.body))
	}

	// Caches keep the file an hour at most, and never past the URL's expiry.
	if cc := e.fetch(t, a.SubpageURL).header.Get("Cache-Control"); cc != "private, max-age=3600" {
		t.Errorf("Cache-Control of a fresh subpage = %q", cc)
	}
	e.clock.Advance(24*time.Hour - 90*time.Second)
	cc := e.fetch(t, a.SubpageURL).header.Get("Cache-Control")
	var maxAge int
	if _, err := fmt.Sscanf(cc, "private, max-age=%d", &maxAge); err != nil || maxAge > 90 || maxAge < 80 {
		t.Errorf("Cache-Control 90 s before expiry = %q, want a max-age of at most 90", cc)
	}

	// Asked for again with less than half its time left, the same URL is
	// made to last a full time to live from then.
	again := decodeAs[apiSubpage](t, e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": first, "owner_id": owner, "varience": 1}))
	if again.SubpageURL != a.SubpageURL || again.ExpiresAt.Sub(e.clock.Now()) < 24*time.Hour-time.Second {
		t.Errorf("asked for again 90 s before expiry: %s, expires %s; want %s for another 24 h", again.SubpageURL, again.ExpiresAt, a.SubpageURL)
	}
	e.clock.Advance(time.Hour)
	if r := e.fetch(t, a.SubpageURL); r.status != http.StatusOK {
		t.Errorf("an extended subpage past its first expiry: %s", r)
	}

	// After the time to live, the URL answers 410.
	e.clock.Advance(24 * time.Hour)
	wantError(t, e.fetch(t, a.SubpageURL), http.StatusGone, "expired")
}

// A PDF that MuPDF repairs as it reads it, but pdfcpu cannot slice (its
// startxref points nowhere), is indexed, and its subpages are refused in
// words, not with a 500.
func TestSubpageOfDamagedPDF(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(sharedPDFDir, "libtasn1.pdf"))
	if err != nil {
		t.Skipf("shared PDFs not found at %s (%v): run from a checkout with ../shared beside it", sharedPDFDir, err)
	}
	e := newEnv(t, withMaxFileBytes(1<<20))
	owner := e.a.customers[0]
	at := bytes.LastIndex(good, []byte("startxref"))
	damaged := append(bytes.Clone(good[:at]), "startxref\n12345\n%%EOF\n"...)
	if j := e.uploadPDF(t, e.a.key, owner, "damaged.pdf", damaged); j.Status != store.StatusSucceeded {
		t.Fatalf("job: %+v", j)
	}
	q := e.query(t, e.a.key, "/query/customer", map[string]any{"customer_id": owner, "query": "ASN.1 structures", "top_k": 1})
	r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": q.Chunks[0].ChunkID, "owner_id": owner, "varience": 1})
	wantError(t, r, http.StatusUnprocessableEntity, "is a damaged PDF: its text could be read, but pages")
}

// A document's subpages go with it: deleted, or replaced through its
// external_id, its pages are no longer served, and their files are gone.
func TestSubpagesGoWithTheirDocument(t *testing.T) {
	e := newEnv(t, withMaxFileBytes(1<<20))
	owner := e.a.customers[0]
	upload := func(externalID string) string {
		t.Helper()
		up := decodeAs[apiUpload](t, e.uploadFile(t, e.a.key, dataPart(map[string]string{"owner_id": owner, "external_id": externalID}), filePart("numbered.pdf", numberedPDF(3))))
		if j := e.waitJob(t, e.a.key, up.JobID); j.Status != store.StatusSucceeded {
			t.Fatalf("job: %+v", j)
		}
		return up.DocumentID
	}
	slice := func(doc string) string {
		t.Helper()
		q := e.query(t, e.a.key, "/query/customer", map[string]any{"customer_id": owner, "query": "two things", "top_k": 10})
		for _, c := range q.Chunks {
			if c.DocumentID == doc {
				return decodeAs[apiSubpage](t, e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": c.ChunkID, "owner_id": owner, "varience": 1})).SubpageURL
			}
		}
		t.Fatalf("no chunk of %s: %+v", doc, q.Chunks)
		return ""
	}
	files := func() int {
		entries, err := os.ReadDir(filepath.Join(e.dir, "subpages"))
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	kept, deleted := upload("kept"), upload("deleted")
	keptURL, deletedURL := slice(kept), slice(deleted)
	if n := files(); n != 2 {
		t.Fatalf("%d subpage files, want 2", n)
	}
	if r := e.do(t, http.MethodDelete, "/documents/"+deleted, e.a.key, "", nil); r.status != http.StatusOK {
		t.Fatalf("delete: %s", r)
	}
	wantError(t, e.fetch(t, deletedURL), http.StatusNotFound, "subpage not found")
	if r := e.fetch(t, keptURL); r.status != http.StatusOK {
		t.Errorf("the other document's subpage: %s", r)
	}
	if n := files(); n != 1 {
		t.Errorf("%d subpage files after the delete, want 1", n)
	}
	upload("kept")
	wantError(t, e.fetch(t, keptURL), http.StatusNotFound, "subpage not found")
	if n := files(); n != 0 {
		t.Errorf("%d subpage files after the replacement, want none", n)
	}
}

func encryptedPDF(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := api.Encrypt(bytes.NewReader(numberedPDF(2)), &out, model.NewAESConfiguration("user-pw", "owner-pw", 256)); err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	return out.Bytes()
}

func TestBadFilesGetClearErrorsAndTheServerStaysUp(t *testing.T) {
	e := newEnv(t, withMaxFileBytes(1<<20))
	owner := e.a.projectID
	good := numberedPDF(3)
	random := make([]byte, 4096)
	rand.Read(random)

	// Refused at upload: nothing is stored.
	e.unchanged(t, func() {
		for _, c := range []struct {
			name   string
			data   []byte
			status int
			want   string
		}{
			{"empty.pdf", nil, 400, "empty"},
			{"random.pdf", random, 415, "supported types"},
			{"big.pdf", append(append([]byte{}, good...), make([]byte, 1<<20)...), 413, "limit"},
		} {
			r := e.uploadFile(t, e.a.key, dataPart(map[string]string{"owner_id": owner}), filePart(c.name, c.data))
			wantError(t, r, c.status, c.want)
		}
	})

	// Accepted, then FAILED with a reason a person understands.
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated.pdf", good[:len(good)/2], "damaged or truncated"},
		{"locked.pdf", encryptedPDF(t), "password-protected"},
		{"scan.pdf", testpdf.Pages([]string{"", ""}), "no text layer"},
	} {
		j := e.uploadPDF(t, e.a.key, owner, c.name, c.data)
		if j.Status != store.StatusFailed || !strings.Contains(j.Error, c.want) {
			t.Errorf("%s: job %s %q, want FAILED with %q", c.name, j.Status, j.Error, c.want)
		}
	}

	// The workers and the server are still fine.
	if j := e.uploadPDF(t, e.a.key, owner, "good.pdf", good); j.Status != store.StatusSucceeded {
		t.Fatalf("a good PDF after the bad ones: %+v", j)
	}
	if r := e.get(t, "/healthz", ""); r.status != http.StatusOK {
		t.Fatalf("healthz: %s", r)
	}
}

func TestTextUploadIsTextWhateverItStartsWith(t *testing.T) {
	e := newEnv(t)
	for _, text := range []string{"%PDF-1.4 is the header every PDF starts with.", "{\\rtf1 is how RTF files begin.", "# Heading\n\n- a list item\n- with **strong** words"} {
		r := e.postJSON(t, "/upload/text", e.a.key, map[string]any{"owner_id": e.a.projectID, "text": text})
		if r.status != http.StatusOK {
			t.Fatalf("%q: %s", text, r)
		}
		up := decodeAs[apiUpload](t, r)
		if j := e.waitJob(t, e.a.key, up.JobID); j.Status != store.StatusSucceeded {
			t.Errorf("%q: job %+v", text, j)
		}
		d := decodeAs[apiDocument](t, e.get(t, "/documents/"+up.DocumentID, e.a.key))
		if want := map[bool]string{true: "markdown", false: "text"}[strings.HasPrefix(text, "#")]; d.Format != want {
			t.Errorf("%q: format %s, want %s", text, d.Format, want)
		}
	}
}

// Subpages are sliced two at a time: a slice holds its whole PDF in
// memory, and a request for a slice that the one before it made takes
// that one.
func TestSubpageSlicesWaitTheirTurn(t *testing.T) {
	var slices slicer
	e := newEnv(t, withMaxFileBytes(1<<20), withSlicer(&slices))
	owner := e.a.customers[0]
	if j := e.uploadPDF(t, e.a.key, owner, "numbered.pdf", numberedPDF(9)); j.Status != store.StatusSucceeded {
		t.Fatalf("job: %+v", j)
	}
	chunk := e.query(t, e.a.key, "/query/customer", map[string]any{"customer_id": owner, "query": "five things", "top_k": 1}).Chunks[0].ChunkID

	var running, most, made atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	slices.set(func(slice func([]byte, int, int) ([]byte, error), data []byte, first, last int) ([]byte, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		made.Add(1)
		entered <- struct{}{}
		<-release
		running.Add(-1)
		return slice(data, first, last)
	})

	// Four slices of their own, and four asking for one slice: the whole
	// document, which variences of 4 and more all name.
	variences := []int{0, 1, 2, 3, 4, 4, 5, 50}
	urls := make([]string, len(variences))
	var wg sync.WaitGroup
	for i, v := range variences {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunk, "owner_id": owner, "varience": v})
			if r.status != http.StatusOK {
				t.Errorf("varience %d: %s", v, r)
				return
			}
			urls[i] = decodeAs[apiSubpage](t, r).SubpageURL
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-entered:
			release <- struct{}{}
			continue
		case <-done:
		}
		break
	}
	if m := most.Load(); m > subpage.MaxSlices || subpage.MaxSlices >= 5 {
		t.Errorf("%d slices ran at once, want at most %d, fewer than the 5 asked for", m, subpage.MaxSlices)
	}
	if n := made.Load(); n > int32(5+subpage.MaxSlices-1) {
		t.Errorf("%d slices for 5 subpages: the requests for one slice did not take the first's", n)
	}
	for i := 5; i < len(urls); i++ {
		if urls[i] != urls[4] {
			t.Errorf("one slice gave two URLs: %s, %s", urls[4], urls[i])
		}
	}
}

// A document deleted while a subpage of it is sliced leaves no subpage: its
// URL would serve the deleted pages, with no key, until it expired.
func TestSubpageOfADocumentDeletedWhileSliced(t *testing.T) {
	var slices slicer
	e := newEnv(t, withMaxFileBytes(1<<20), withSlicer(&slices))
	owner := e.a.customers[0]
	up := decodeAs[apiUpload](t, e.uploadFile(t, e.a.key, dataPart(map[string]string{"owner_id": owner}), filePart("numbered.pdf", numberedPDF(3))))
	if j := e.waitJob(t, e.a.key, up.JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("job: %+v", j)
	}
	chunk := e.query(t, e.a.key, "/query/customer", map[string]any{"customer_id": owner, "query": "two things", "top_k": 1}).Chunks[0].ChunkID
	slices.set(func(slice func([]byte, int, int) ([]byte, error), data []byte, first, last int) ([]byte, error) {
		if r := e.do(t, http.MethodDelete, "/documents/"+up.DocumentID, e.a.key, "", nil); r.status != http.StatusOK {
			t.Errorf("delete during the slice: %s", r)
		}
		return slice(data, first, last)
	})
	wantError(t, e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunk, "owner_id": owner, "varience": 1}), http.StatusNotFound, "chunk "+chunk+" not found")
	entries, err := os.ReadDir(filepath.Join(e.dir, "subpages"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%d subpage files of a deleted document kept", len(entries))
	}
}
