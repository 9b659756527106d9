package pdf

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/testpdf"
)

// A page drawn glyph by glyph holds more text than a page may: the
// document fails at that page, naming the limit, and the worker reads no
// further.
func TestExtractRefusesAPageOverItsTextLimit(t *testing.T) {
	var read int
	_, err := ExtractWith(context.Background(), FormatPDF, testpdf.GlyphBomb(5, 200_000), Options{
		Limits:   Limits{PageText: 100_000},
		Progress: func(done, _ int) { read = done },
	})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	for _, want := range []string{"page 1 ", "100000 bytes", "--max-page-text"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if read != 0 {
		t.Errorf("%d pages were handed on; the first was over the limit", read)
	}
}

// With the defaults, a page of two million glyphs (a 2 KB file) is
// refused.
func TestExtractRefusesAGlyphBombByDefault(t *testing.T) {
	data := testpdf.GlyphBomb(50, 2_000_000)
	if len(data) > 16<<10 {
		t.Fatalf("the bomb is %d bytes; it was meant to be small", len(data))
	}
	_, err := Extract(context.Background(), data)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-page-text") {
		t.Fatalf("got %v, want the page text limit", err)
	}
}

// Pages under their own limit stop at the document's: the error names
// it, and the pages after it are not read.
func TestExtractStopsAtTheDocumentTextLimit(t *testing.T) {
	var read int
	_, err := ExtractWith(context.Background(), FormatPDF, testpdf.GlyphBomb(40, 20_000), Options{
		Limits:   Limits{Text: 100_000},
		Progress: func(done, _ int) { read = done },
	})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-document-text") {
		t.Fatalf("got %v, want the document text limit", err)
	}
	if read > 5 {
		t.Errorf("%d of 40 pages of 20,000 glyphs were read under a limit of 100,000 bytes", read)
	}
}

func TestExtractRefusesTooManyPages(t *testing.T) {
	pages := make([]string, 12)
	for i := range pages {
		pages[i] = fmt.Sprintf("Page %d of a long report.", i+1)
	}
	_, err := ExtractWith(context.Background(), FormatPDF, testpdf.Pages(pages), Options{Limits: Limits{Pages: 10}})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "12 pages") || !strings.Contains(err.Error(), "--max-document-pages") {
		t.Fatalf("got %v, want the page limit, naming 12 pages", err)
	}
	if _, err := ExtractWith(context.Background(), FormatPDF, testpdf.Pages(pages), Options{Limits: Limits{Pages: 12}}); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}

func TestExtractRefusesTextOverTheLimit(t *testing.T) {
	text := []byte(strings.Repeat("plain words ", 1000))
	for _, f := range []Format{FormatText, FormatMarkdown} {
		if _, err := ExtractWith(context.Background(), f, text, Options{Limits: Limits{Text: 5000}}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: got %v, want ErrTooLarge", f, err)
		}
	}
	html := []byte("<html><body><p>" + string(text) + "</p></body></html>")
	if _, err := ExtractWith(context.Background(), FormatHTML, html, Options{Limits: Limits{Text: 5000}}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("html: got %v, want ErrTooLarge", err)
	}
}

// HTML's markup costs nothing to keep: a page of a million empty
// elements is read token by token. Built as a tree it took 200 MB for
// these 3 MB, and 64 MiB of it would take several gigabytes.
func TestExtractHTMLCostsItsTextNotItsMarkup(t *testing.T) {
	in := []byte("<html><body>" + strings.Repeat("<p>", 1_000_000) + "word</body></html>")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	doc, err := ExtractWith(context.Background(), FormatHTML, in, Options{})
	runtime.ReadMemStats(&after)
	if err != nil || doc.Pages[0].Text != "word" {
		t.Fatalf("got %v, %v", doc, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(len(in)) {
		t.Errorf("reading %d bytes of HTML allocated %d MB", len(in), alloc>>20)
	}
}

// frames writes workerMessages as a worker would.
func frames(t *testing.T, ms ...workerMessage) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	for i := range ms {
		if err := writeFrame(w, &ms[i]); err != nil {
			t.Fatal(err)
		}
	}
	return &b
}

// The parent counts again what the worker sends: a worker that ignores
// the limits (subverted by the file it read) is stopped by them as well.
func TestReadWorkerStreamEnforcesTheLimits(t *testing.T) {
	page := func(text string) workerMessage { return workerMessage{Page: &workerPage{Text: text}} }
	done := workerMessage{Result: &workerResult{}}
	limits := Limits{Pages: 3, PageText: 10, Text: 25}.withDefaults()
	for _, c := range []struct {
		name string
		ms   []workerMessage
		want string
	}{
		{"a page count over the limit", []workerMessage{{PageCount: 4}, done}, "--max-document-pages"},
		{"more pages than it said", []workerMessage{{PageCount: 1}, page("a"), page("b"), page("c"), page("d"), done}, "--max-document-pages"},
		{"a page over its limit", []workerMessage{{PageCount: 2}, page(strings.Repeat("x", 11)), done}, "--max-page-text"},
		{"text over the limit", []workerMessage{{PageCount: 3}, page("0123456789"), page("0123456789"), page("0123456789"), done}, "--max-document-text"},
	} {
		_, err := readWorkerStream(frames(t, c.ms...), nil, 1<<20, limits)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want the error naming %s", c.name, err, c.want)
		}
	}
	res, err := readWorkerStream(frames(t, workerMessage{PageCount: 3}, page("0123456789"), page("0123456789"), page("01234"), done), nil, 1<<20, limits)
	if err != nil || len(res.Pages) != 3 {
		t.Fatalf("at the limits: %v, %v", res, err)
	}
}

// A frame's length is checked before anything is read or allocated for
// it: a worker claiming to send 4 GB gets nothing allocated.
func TestReadFrameRefusesAnOversizedFrameBeforeReadingIt(t *testing.T) {
	var head [frameHeader]byte
	binary.BigEndian.PutUint32(head[:], 0xffffffff)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := readFrame(bytes.NewReader(head[:]), 1<<20, &workerMessage{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("got %v, want errFrameTooLarge", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("refusing the frame allocated %d bytes", alloc)
	}
}

// A Word file whose document inflates a thousandfold is refused before
// MuPDF unpacks it.
func TestExtractRefusesAZipBomb(t *testing.T) {
	padding := strings.Repeat(" ", 20<<20)
	bomb := makeDOCX(t, "Some words."+padding)
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	_, err := Extract(context.Background(), bomb)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "times its packed size") {
		t.Fatalf("got %v, want the unzip limit", err)
	}
	if _, err := Extract(context.Background(), makeDOCX(t, "Some words.")); err != nil {
		t.Fatalf("the same file without the padding: %v", err)
	}
}

// An archive announcing more members than a document holds is refused
// before its directory is read into memory, by Detect as by the worker.
func TestDetectRefusesAnArchiveOfTooManyMembers(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range maxZipMembers + 1 {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("word/%d.xml", i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Detect(b.Bytes())
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "20000") {
		t.Fatalf("got %v, want the member limit", err)
	}
}

// A stored file is read by the worker from the file: the parent does not
// read it into memory, junk before a PDF's header included.
func TestExtractFromAFile(t *testing.T) {
	pages := []string{"The first page is about tides.", "The second page is about harbours."}
	for name, data := range map[string][]byte{
		"pdf":                 testpdf.Pages(pages),
		"pdf after some junk": append([]byte("junk from a mail gateway\n"), testpdf.Pages(pages)...),
	} {
		path := filepath.Join(t.TempDir(), "upload")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := ExtractFrom(context.Background(), FormatPDF, f, int64(len(data)), Options{})
		f.Close()
		if err != nil || len(doc.Pages) != 2 || !strings.Contains(doc.Pages[1].Text, "harbours") {
			t.Errorf("%s: %+v, %v", name, doc, err)
		}
	}
}
