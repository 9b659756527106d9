package server_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
)

// Scans are made here from the shared PDFs (pdf.ScanPages renders pages to
// images as a scanner would) and go through the whole pipeline: upload,
// OCR in the worker, chunks with page numbers, query, subpage.

// requireTesseract skips a test that needs Tesseract where it is not
// installed; CI installs it (.ci/run), so there a skip is a failure.
func requireTesseract(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tesseract"); err == nil {
		return
	}
	const msg = "tesseract not installed (Debian: apt-get install tesseract-ocr tesseract-ocr-eng)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must run the OCR tests")
	}
	t.Skip(msg + "; skipping")
}

// sharedScan scans pages (1-based) of a shared PDF at dpi into f (an
// image-only PDF, or a PNG of one page), skipping the test when the
// shared PDFs are absent.
func sharedScan(t *testing.T, name string, pages []int, dpi int, f pdf.Format) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedPDFDir, name))
	if err != nil {
		t.Skipf("shared PDF %s not available (%v); skipping", name, err)
	}
	scan, err := pdf.ScanPages(context.Background(), data, pages, dpi, f)
	if err != nil {
		t.Fatal(err)
	}
	return scan
}

// chunkOnPage returns the first chunk of q on page holding phrase.
func chunkOnPage(q apiQuery, page int, phrase string) *apiChunk {
	for i, ch := range q.Chunks {
		if ch.Page != nil && *ch.Page == page && strings.Contains(strings.Join(words(ch.Text), " "), phrase) {
			return &q.Chunks[i]
		}
	}
	return nil
}

// TestScannedPDFQueryByPageAndSubpage uploads two pages of the Bash manual
// scanned at 300 dpi: a query for a phrase of the second finds that page,
// and its subpage is sliced from the scan.
func TestScannedPDFQueryByPageAndSubpage(t *testing.T) {
	requireTesseract(t)
	const phrase = "not treated specially and do not" // bashref.pdf page 70
	scan := sharedScan(t, "bashref.pdf", []int{69, 70}, 300, pdf.FormatPDF)
	e := newEnv(t, withMaxFileBytes(16<<20))
	owner := e.a.projectID
	j := e.uploadPDF(t, e.a.key, owner, "scanned-bashref.pdf", scan)
	if j.Status != store.StatusSucceeded {
		t.Fatalf("job ended %s: %s", j.Status, j.Error)
	}
	d := decodeAs[apiDocument](t, e.get(t, "/documents/"+j.DocumentID, e.a.key))
	if d.Format != "pdf" {
		t.Errorf("format %q, want pdf", d.Format)
	}
	q := e.query(t, e.a.key, "/query/project", map[string]any{"project_id": owner, "query": "read: delimiter characters are not treated specially until nchars characters are read", "top_k": 5})
	hit := chunkOnPage(q, 2, phrase)
	if hit == nil {
		t.Fatalf("no chunk of page 2 holding %q in the top 5: %+v", phrase, q.Chunks)
	}
	for _, ch := range q.Chunks {
		if ch.Page != nil && *ch.Page == 1 && strings.Contains(strings.Join(words(ch.Text), " "), phrase) {
			t.Errorf("page 1 claims the phrase of page 2: %q", ch.Text)
		}
	}
	r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": hit.ChunkID, "owner_id": owner, "varience": 1})
	if r.status != http.StatusOK {
		t.Fatalf("subpage: %s", r)
	}
	sp := decodeAs[apiSubpage](t, r)
	if sp.FirstPage != 1 || sp.LastPage != 2 {
		t.Errorf("subpage pages %d–%d, want 1–2", sp.FirstPage, sp.LastPage)
	}
	got := e.fetch(t, sp.SubpageURL)
	if got.status != http.StatusOK || got.header.Get("Content-Type") != "application/pdf" {
		t.Fatalf("GET subpage: %d %s", got.status, got.header.Get("Content-Type"))
	}
	if n, err := pdf.PageCount(got.body); n != 2 || err != nil {
		t.Errorf("subpage has %d pages (%v), want 2", n, err)
	}
}

// TestPNGUpload uploads a page of the libtasn1 manual as a PNG, as a phone
// or a scanner would send it: it is indexed as page 1 of a png document.
func TestPNGUpload(t *testing.T) {
	requireTesseract(t)
	const phrase = "array is a vector created by" // libtasn1.pdf page 12
	png := sharedScan(t, "libtasn1.pdf", []int{12}, 200, pdf.FormatPNG)
	e := newEnv(t, withMaxFileBytes(16<<20))
	owner := e.a.projectID
	j := e.uploadPDF(t, e.a.key, owner, "photo-of-page.png", png)
	if j.Status != store.StatusSucceeded {
		t.Fatalf("job ended %s: %s", j.Status, j.Error)
	}
	if d := decodeAs[apiDocument](t, e.get(t, "/documents/"+j.DocumentID, e.a.key)); d.Format != "png" {
		t.Errorf("format %q, want png", d.Format)
	}
	q := e.query(t, e.a.key, "/query/project", map[string]any{"project_id": owner, "query": phrase, "top_k": 5})
	hit := chunkOnPage(q, 1, phrase)
	if hit == nil {
		t.Fatalf("no chunk of page 1 holding %q: %+v", phrase, q.Chunks)
	}
	// A subpage is a slice of a PDF; an image has none to give.
	r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": hit.ChunkID, "owner_id": owner, "varience": 0})
	wantError(t, r, http.StatusBadRequest, "not from a PDF")
}

// TestScanWithoutTesseract hides Tesseract from the server: a scan's job
// fails saying what to install, and a text PDF is still indexed.
func TestScanWithoutTesseract(t *testing.T) {
	scan, err := pdf.ScanPages(context.Background(), numberedPDF(1), []int{1}, 72, pdf.FormatPDF)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	e := newEnv(t)
	owner := e.a.projectID
	j := e.uploadPDF(t, e.a.key, owner, "scan.pdf", scan)
	if j.Status != store.StatusFailed || !strings.Contains(j.Error, "OCR is not available") || !strings.Contains(j.Error, "apt-get install tesseract-ocr tesseract-ocr-eng") {
		t.Errorf("scan without Tesseract: job %s %q, want FAILED saying what to install", j.Status, j.Error)
	}
	if j := e.uploadPDF(t, e.a.key, owner, "text.pdf", numberedPDF(2)); j.Status != store.StatusSucceeded {
		t.Errorf("text PDF without Tesseract: job %s %q", j.Status, j.Error)
	}
}
