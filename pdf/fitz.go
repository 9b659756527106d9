package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gen2brain/go-fitz"
)

// MuPDF (through go-fitz) reads every paged format: PDF, XPS, EPUB, FB2,
// MOBI and the Office formats. It runs in a worker process (worker.go),
// one document a process, so documents are read in parallel by running
// several workers, never by several goroutines in one process: see fitzMu.

const (
	// pdfTrailerWindow is how far from the end of a PDF the "%%EOF" marker
	// must appear. A PDF without it was truncated (an interrupted upload
	// or copy); MuPDF would "repair" it and silently index only the pages
	// it could find, so it is refused as corrupt instead.
	pdfTrailerWindow = 1024

	// pageCountTimeout bounds PageCount and Slice, which take no context.
	pageCountTimeout = time.Minute
)

// extractFitz extracts the text of every page with MuPDF, in a worker
// process (see worker.go), reading pages without a text layer with OCR
// when the format can hold scans, and cleans it.
func extractFitz(ctx context.Context, f Format, r io.ReaderAt, size int64, o Options) (*Document, error) {
	in, err := fitzReader(f, r, size)
	if err != nil {
		return nil, err
	}
	job := workerJob{mode: workerModeExtract, opts: workerOptions{Format: f, Limits: o.Limits, Sandbox: o.sandbox}, progress: o.Progress}
	if f.mayHoldScans() {
		ocr := o.OCR.withDefaults()
		job.opts.OCR = &ocr
	}
	res, err := runWorkerJob(ctx, job, in)
	if err != nil {
		return nil, err
	}
	if len(res.Pages) == 0 {
		return nil, fmt.Errorf("pdf: extract %s: document has no pages: %w", f, ErrCorrupt)
	}
	raw := make([]string, len(res.Pages))
	for i, p := range res.Pages {
		raw[i] = p.Text
	}
	texts := cleanPages(raw)
	doc := &Document{Format: f, Paged: true, Pages: make([]Page, len(texts))}
	sections := pageSections(res.Title, res.Outline, len(texts))
	anyText := false
	for i, t := range texts {
		doc.Pages[i] = Page{Number: i + 1, Text: t, Sections: sections[i]}
		anyText = anyText || hasWordChar(t)
		if p := res.Pages[i]; p.OCR {
			doc.OCRPages++
		} else if p.Problem != "" {
			doc.Unread = append(doc.Unread, UnreadPage{Number: i + 1, Reason: p.Detail})
		}
	}
	if !anyText {
		return nil, noTextAfterOCR(f, job.opts.OCR, res.Pages)
	}
	return doc, nil
}

// noTextAfterOCR is the error for a document in which neither the text
// layer nor OCR found words: it says what OCR did, since that decides
// what the uploader (or the operator) can do about it.
func noTextAfterOCR(f Format, ocr *OCR, pages []workerPage) error {
	// Cleaning removes words only with page numbers, so words in the raw
	// text mean the document's only text was page numbers.
	numbersOnly := false
	outcome := ocrNotRun
	var timedOut, failed *workerPage
	timedOutPage := 0
	for i := range pages {
		p := &pages[i]
		numbersOnly = numbersOnly || hasWordChar(p.Text)
		switch p.Problem {
		case ocrProblemMissing:
			outcome = ocrUnavailable
		case ocrProblemTimeout:
			if timedOut == nil {
				timedOut, timedOutPage = p, i+1
			}
		case ocrProblemFailed:
			if failed == nil {
				failed = p
			}
		}
		if p.OCRTried && outcome == ocrNotRun {
			outcome = ocrFoundNothing
		}
	}
	switch {
	case ocr == nil:
		outcome = ocrNotRun
	case outcome == ocrUnavailable:
		return &noTextError{format: f, pageNumbersOnly: numbersOnly, ocr: ocrUnavailable, detail: errOCRUnavailable(*ocr, "").Error()}
	case timedOut != nil:
		return &tooSlowError{msg: fmt.Sprintf("OCR could not read page %d in time (%s), and no page had text", timedOutPage, timedOut.Detail)}
	case failed != nil:
		return &noTextError{format: f, pageNumbersOnly: numbersOnly, ocr: ocrFailed, detail: failed.Detail}
	}
	return &noTextError{format: f, pageNumbersOnly: numbersOnly, ocr: outcome}
}

// readDocument opens data with MuPDF in this process and sends the page
// count, then each page's raw text (and OCR's, see pageOCR) as soon as it
// is read; the worker process calls it. A Go panic (in go-fitz or here)
// becomes ErrCorrupt; ctx is checked between pages.
func readDocument(ctx context.Context, data []byte, opts workerOptions, send func(workerMessage)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pdf: extraction failed: %v: %w", r, ErrCorrupt)
		}
	}()
	if zipFormats[opts.Format] {
		if err := checkUnzipped(data); err != nil {
			return err
		}
	}
	doc, err := openFitz(data)
	if err != nil {
		return err
	}
	defer doc.Close()
	n := doc.NumPage()
	if n < 0 {
		return fmt.Errorf("pdf: count pages: %w", ErrCorrupt)
	}
	limits := opts.Limits.withDefaults()
	if n > limits.Pages {
		return errTooManyPages(n, limits.Pages)
	}
	title, outline := readOutline(doc.Document)
	send(workerMessage{PageCount: n, Title: title, Outline: outline})
	var ocr *pageOCR
	if opts.OCR != nil {
		ocr = newPageOCR(*opts.OCR, opts.Format)
	}
	failed := 0
	var total int64 // bytes of text sent
	for i := range n {
		if ctx.Err() != nil {
			return errStopped(ctx)
		}
		var page workerPage
		text, err := doc.Text(i)
		if err != nil {
			// A page MuPDF cannot load keeps its number with no text, so
			// the pages after it are still cited correctly.
			failed++
			send(workerMessage{Page: &page})
			continue
		}
		page.Text = text
		if ocr != nil {
			ocr.read(ctx, doc, data, i, &page)
		}
		if len(page.Text) > limits.PageText {
			return errPageTooLong(i+1, limits.PageText)
		}
		if total += int64(len(page.Text)); total > limits.Text {
			return errTextTooLong(limits.Text)
		}
		send(workerMessage{Page: &page})
	}
	if n > 0 && failed == n {
		return fmt.Errorf("pdf: no page could be read: %w", ErrCorrupt)
	}
	return nil
}

// readPages opens data with MuPDF in this process and returns the raw text
// of each page's text layer, without OCR.
func readPages(ctx context.Context, data []byte) ([]string, error) {
	var pages []string
	err := readDocument(ctx, data, workerOptions{}, func(m workerMessage) {
		if m.Page != nil {
			pages = append(pages, m.Page.Text)
		}
	})
	if err != nil {
		return nil, err
	}
	return pages, nil
}

// countFitz returns MuPDF's page count for data, from a worker process.
func countFitz(f Format, data []byte) (int, error) {
	if f == FormatPDF && !hasPDFTrailer(data) {
		return 0, fmt.Errorf("pdf: no end-of-file marker, the PDF is truncated: %w", ErrCorrupt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pageCountTimeout)
	defer cancel()
	res, err := runInWorker(ctx, workerModeCount, fitzInput(f, data))
	if err != nil {
		return 0, err
	}
	return res.PageCount, nil
}

// readPageCount opens data with MuPDF in this process and counts pages.
func readPageCount(data []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("pdf: count pages failed: %v: %w", r, ErrCorrupt)
		}
	}()
	doc, err := openFitz(data)
	if err != nil {
		return 0, err
	}
	defer doc.Close()
	n = doc.NumPage()
	if n <= 0 {
		return 0, fmt.Errorf("pdf: count pages: document has no pages: %w", ErrCorrupt)
	}
	return n, nil
}

// fitzMu lets one document at a time be open with MuPDF in a process.
// go-fitz gives each document a context of its own but no lock functions,
// and MuPDF guards some state shared by the whole process only with those
// locks: its HarfBuzz allocator, for one, finds its context in a global
// set under the FreeType lock, so two EPUBs laid out at once crashed the
// process on a NULL context. A worker reads one document, so only this
// package's tests, which read in process, ever wait for it.
var fitzMu sync.Mutex

// fitzDoc is a document open with MuPDF, holding fitzMu until it is closed.
type fitzDoc struct{ *fitz.Document }

// Close closes the document and lets the next one be opened.
func (d fitzDoc) Close() {
	defer fitzMu.Unlock()
	d.Document.Close()
}

// openFitz opens data with MuPDF once no other document is open in this
// process (see fitzMu), mapping go-fitz errors onto the package's
// sentinels and releasing the MuPDF context when opening fails.
func openFitz(data []byte) (fitzDoc, error) {
	fitzMu.Lock()
	opened := false
	defer func() {
		// Unlocked on a panic too, which the callers recover from.
		if !opened {
			fitzMu.Unlock()
		}
	}()
	doc, err := fitz.NewFromMemory(data)
	if err == nil {
		opened = true
		return fitzDoc{doc}, nil
	}
	if doc != nil {
		doc.Close()
	}
	if errors.Is(err, fitz.ErrNeedsPassword) {
		return fitzDoc{}, fmt.Errorf("pdf: open document: %w", ErrEncrypted)
	}
	return fitzDoc{}, fmt.Errorf("pdf: open document: %v: %w", err, ErrCorrupt)
}

// fitzReader is what the worker reads of content of size bytes at r: the
// content from where fitzInput would have it start, which a sample finds,
// so that a stored file goes to the worker without passing through the
// parent's memory (an *os.File at offset 0 becomes the worker's standard
// input itself). A PDF without its end-of-file marker is refused.
func fitzReader(f Format, r io.ReaderAt, size int64) (io.Reader, error) {
	s, err := sampleOf(r, size)
	if err != nil {
		return nil, fmt.Errorf("pdf: read the document: %w", err)
	}
	if f == FormatPDF && !hasPDFTrailer(s.tail) {
		return nil, fmt.Errorf("pdf: no end-of-file marker, the PDF is truncated: %w", ErrCorrupt)
	}
	start := int64(len(s.head) - len(fitzInput(f, s.head)))
	if file, ok := r.(*os.File); ok && start == 0 {
		if _, err := file.Seek(0, io.SeekStart); err == nil {
			return file, nil
		}
	}
	return io.NewSectionReader(r, start, size-start), nil
}

// fitzInput trims what go-fitz's own sniffing would trip over: junk before
// a PDF header and whitespace or a BOM before an FB2's XML declaration.
func fitzInput(f Format, data []byte) []byte {
	switch f {
	case FormatPDF:
		if i := pdfHeaderOffset(data, data); i > 0 {
			return data[i:]
		}
	case FormatFB2:
		if i := bytes.Index(data, []byte("<?xml")); i > 0 {
			return data[i:]
		}
	}
	return data
}

// hasPDFTrailer reports whether "%%EOF" occurs near the end of data.
func hasPDFTrailer(data []byte) bool {
	return bytes.Contains(data[max(0, len(data)-pdfTrailerWindow):], []byte("%%EOF"))
}
