package pdf

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The sentinel errors are what callers test for with errors.Is. Their
// messages are written for the person who uploaded the file: the ingest
// worker stores them as a job's error and the server shows them as they are.
var (
	// ErrUnsupported means the content is not a type docsift can index.
	// Detect returns an *UnsupportedError, which wraps it and names the type.
	ErrUnsupported = errors.New("unsupported file type")

	// ErrEncrypted means the document needs a password to open.
	ErrEncrypted = errors.New("password-protected PDFs are not supported")

	// ErrNoText means the document opened but holds no extractable text:
	// no text layer, and (for PDFs, XPS and images) no text that OCR could
	// read. Errors wrapping it say which, and what OCR did.
	ErrNoText = errors.New("the document has no text layer, and OCR found no text in it")

	// ErrEmpty means the file has zero bytes.
	ErrEmpty = errors.New("the file is empty")

	// ErrCorrupt means the content claims a supported type but cannot be
	// read: truncated, damaged or not what its header says.
	ErrCorrupt = errors.New("the file is damaged or truncated and cannot be read")

	// ErrPageRange means a page range selects no page of the document.
	ErrPageRange = errors.New("page range is outside the document")

	// ErrTooSlow means extraction did not finish within the caller's time
	// limit. Past a deadline it deliberately does not wrap
	// context.DeadlineExceeded: a document that is too big or too complex
	// to extract in time will be just as slow on the next attempt, and
	// generic classifiers (llm.IsTransient among them) take a deadline for
	// a network timeout worth retrying. When the caller cancelled instead,
	// the error also wraps context.Canceled, so a shutdown can be told apart.
	ErrTooSlow = errors.New("the document took too long to process; it may be too large or too complex, so try splitting it into smaller files")
)

// errStopped returns the error for an extraction that ctx ended (see
// ErrTooSlow for why a deadline is not wrapped).
func errStopped(ctx context.Context) error {
	err := ctx.Err()
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("pdf: extract: %w", ErrTooSlow)
	}
	return fmt.Errorf("pdf: extract: %w: %w", ErrTooSlow, err)
}

// errStoppedAt is errStopped for an extraction that had read done of its
// total pages when ctx ended past its deadline: the message says how far
// it got, which tells a scan that is merely long from one that is stuck.
func errStoppedAt(ctx context.Context, done, total int) error {
	if total <= 0 || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errStopped(ctx)
	}
	return fmt.Errorf("pdf: extract: %w", &tooSlowError{msg: fmt.Sprintf(
		"the document took too long to process: %d of its %d pages were read in the time allowed; it may be too large or too complex, so try splitting it into smaller files", done, total)})
}

// tooSlowError is ErrTooSlow with a message of its own.
type tooSlowError struct{ msg string }

func (e *tooSlowError) Error() string { return e.msg }

func (e *tooSlowError) Is(target error) bool { return target == ErrTooSlow }

// UnsupportedError reports content that Detect recognised (or did not) but
// docsift cannot index. Its message names what was found and lists what is
// supported, so a 415 response or a FAILED job tells the user what to send
// instead. errors.Is(err, ErrUnsupported) is true for it.
type UnsupportedError struct {
	// Found describes the detected content, e.g. "PNG image" or "binary data".
	Found string
	// Reason optionally says why that content is refused.
	Reason string
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unsupported file type: %s", e.Found)
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	fmt.Fprintf(&b, "; supported types are %s", strings.Join(Supported(), ", "))
	return b.String()
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// noTextError is ErrNoText with a message that fits the format and what
// OCR did. An empty Word document or a blank text file has nothing to do
// with scanning, so only the formats that hold scans (PDF, XPS, images)
// speak of it. It also reports, for any format, a text layer that holds
// nothing but page numbers, which cleaning removes (see
// removeRunningLines): "no text layer" would be untrue there.
type noTextError struct {
	format          Format
	pageNumbersOnly bool
	ocr             ocrOutcome
	detail          string // why OCR was unavailable or failed
}

// ocrOutcome is what OCR did for a document without text.
type ocrOutcome int

const (
	ocrNotRun       ocrOutcome = iota // the format is not read with OCR, or no page needed it
	ocrFoundNothing                   // OCR read the pages and found no words
	ocrUnavailable                    // Tesseract is not installed
	ocrFailed                         // Tesseract failed on every page it tried
)

// formatNames are how the no-text message refers to each format.
var formatNames = map[Format]string{
	FormatPDF:      "PDF",
	FormatXPS:      "XPS document",
	FormatEPUB:     "EPUB book",
	FormatFB2:      "FictionBook",
	FormatMOBI:     "MOBI book",
	FormatDOCX:     "Word document",
	FormatXLSX:     "Excel workbook",
	FormatPPTX:     "PowerPoint presentation",
	FormatPNG:      "PNG image",
	FormatJPEG:     "JPEG image",
	FormatTIFF:     "TIFF image",
	FormatText:     "text file",
	FormatMarkdown: "Markdown file",
	FormatHTML:     "HTML page",
}

func (e *noTextError) Error() string {
	name := formatNames[e.format]
	if name == "" {
		name = string(e.format) + " document"
	}
	if !e.format.mayHoldScans() {
		switch {
		case e.pageNumbersOnly:
			return "the " + name + " contains no text to index besides page numbers"
		case !e.format.Paged():
			return "the " + name + " contains no words to index, only blank space or punctuation"
		}
		return "the " + name + " contains no text to index"
	}
	var what string
	switch {
	case e.pageNumbersOnly:
		what = "the " + name + "'s only text is its page numbers, so its pages are probably scanned images"
	case e.format.IsImage():
		what = "the " + name + " has no text layer: it can only be read with OCR"
	default:
		what = "the " + name + " has no text layer: its pages are probably scanned images"
	}
	switch e.ocr {
	case ocrFoundNothing:
		if e.format.IsImage() {
			return "OCR found no text in the " + name + "; it may be blank, or its text too small, faint or blurred to read"
		}
		return what + ", and OCR found no text on them; they may be blank, or their text too small, faint or blurred to read"
	case ocrUnavailable:
		return what + ", and " + e.detail
	case ocrFailed:
		if e.format.IsImage() {
			return what + ", and OCR failed on it: " + e.detail
		}
		return what + ", and OCR failed on them: " + e.detail
	}
	return what
}

// Is makes errors.Is true for ErrNoText and, when Tesseract was missing,
// ErrOCRUnavailable.
func (e *noTextError) Is(target error) bool {
	return target == ErrNoText || target == ErrOCRUnavailable && e.ocr == ocrUnavailable
}

// errNoText returns the ErrNoText flavour that fits the format.
func errNoText(f Format) error {
	return &noTextError{format: f}
}
