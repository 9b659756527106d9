package pdf

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// Page is the text of one page. Number is 1-based for paged formats and 0
// for formats without pages (text, Markdown, HTML).
type Page struct {
	Number int
	Text   string
	// Sections are the titles that say where in the document the page
	// is: its metadata title, when it has one, then, from its outline
	// (bookmarks), the section the page continues and those that start
	// on it (see outline.go). Empty for documents without either.
	Sections []string
}

// Document is the cleaned text of a file, page by page. Paged formats keep
// every page, including ones whose text is empty, so that Pages[i].Number is
// always i+1 and page counts agree with PageCount and Slice.
type Document struct {
	Format Format
	Paged  bool
	Pages  []Page

	// OCRPages counts the pages whose text came from OCR.
	OCRPages int
	// Unread lists the pages that needed OCR but got no text from it
	// (Tesseract missing, failing or too slow on them); they are in Pages
	// without text. The rest of the document was read.
	Unread []UnreadPage
}

// UnreadPage is a page left without text, and why.
type UnreadPage struct {
	Number int
	Reason string
}

// Options tune ExtractWith. The zero value reads pages without a text layer
// with OCR in English (when Tesseract is installed) and reports no progress.
type Options struct {
	OCR OCR
	// Limits bound what reading the document may cost (see limits.go).
	Limits Limits
	// Progress, when set, is called as the pages of a paged document are
	// read, with the pages done and the page count: once when the count is
	// known and after each page. It runs on the extracting goroutine, so a
	// slow Progress slows extraction.
	Progress func(done, total int)
	// sandbox widens the extraction worker's sandbox (see sandboxConfig),
	// for tests and benchmarks.
	sandbox sandboxConfig
}

// Extract detects the format of data, extracts its text per page and cleans
// it (see clean.go). It never panics and a malformed file cannot crash the
// caller: MuPDF runs in a worker process (see worker.go) that is killed when
// ctx ends, in which case the error wraps ErrTooSlow (and context.Canceled
// when ctx was cancelled rather than past its deadline; see ErrTooSlow).
//
// Errors wrap one of ErrEmpty, ErrUnsupported, ErrEncrypted, ErrCorrupt,
// ErrNoText or ErrTooSlow, whose messages can be shown to the user.
func Extract(ctx context.Context, data []byte) (*Document, error) {
	f, err := Detect(data)
	if err != nil {
		return nil, err
	}
	return ExtractAs(ctx, f, data)
}

// ExtractAs is Extract for content whose format is already known: detected
// when it was uploaded, or declared by the caller, as a text upload is text
// whatever its first bytes look like.
func ExtractAs(ctx context.Context, f Format, data []byte) (*Document, error) {
	return ExtractWith(ctx, f, data, Options{})
}

// ExtractWith is ExtractAs with options: how OCR reads pages without a text
// layer (PDF, XPS and images), and a progress report. ctx bounds the whole
// document; each page's OCR also has o.OCR.PageTimeout. A page OCR gives up
// on is left without text and listed in Document.Unread; only when no page
// has any text is it an error (wrapping ErrNoText, and ErrOCRUnavailable
// when Tesseract is not installed, or ErrTooSlow when OCR timed out).
func ExtractWith(ctx context.Context, f Format, data []byte, o Options) (*Document, error) {
	return ExtractFrom(ctx, f, bytes.NewReader(data), int64(len(data)), o)
}

// ExtractFrom is ExtractWith for content of size bytes read through r: a
// stored original, which goes to the worker process as it is read (from
// the file itself when r is an *os.File) rather than through the caller's
// memory. Text and HTML, read in this process, are read whole.
func ExtractFrom(ctx context.Context, f Format, r io.ReaderAt, size int64, o Options) (*Document, error) {
	if size == 0 {
		return nil, ErrEmpty
	}
	if ctx.Err() != nil {
		return nil, errStopped(ctx)
	}
	o.Limits = o.Limits.withDefaults()
	switch f {
	case FormatText, FormatMarkdown, FormatHTML:
		data := make([]byte, size)
		if _, err := r.ReadAt(data, 0); err != nil && err != io.EOF {
			return nil, fmt.Errorf("pdf: read the document: %w", err)
		}
		if f == FormatHTML {
			return extractHTML(data, o.Limits.Text)
		}
		return extractText(f, data, o.Limits.Text)
	}
	return extractFitz(ctx, f, r, size, o)
}

// PageCount returns the number of pages MuPDF sees in a paged document, the
// same numbering Extract uses. Unpaged formats count as one page.
func PageCount(data []byte) (int, error) {
	f, err := Detect(data)
	if err != nil {
		return 0, err
	}
	if !f.Paged() {
		return 1, nil
	}
	return countFitz(f, data)
}
