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

	// ErrNoText means the document opened but holds no extractable text,
	// which for a PDF almost always means scanned page images.
	ErrNoText = errors.New("no text layer; scanned PDFs need OCR, which is not supported")

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

// noTextError is ErrNoText for formats other than PDF, whose message would
// otherwise talk about scanned PDFs: an empty Word document or a blank
// text file has nothing to do with scanning. It also reports, for any
// format, a text layer that holds nothing but page numbers, which cleaning
// removes (see removeRunningLines): "no text layer" would be untrue there.
type noTextError struct {
	format          Format
	pageNumbersOnly bool
}

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
	FormatText:     "text file",
	FormatMarkdown: "Markdown file",
	FormatHTML:     "HTML page",
}

func (e *noTextError) Error() string {
	name := formatNames[e.format]
	if name == "" {
		name = string(e.format) + " document"
	}
	if e.pageNumbersOnly {
		if e.format == FormatPDF || e.format == FormatXPS {
			return "the " + name + "'s only text is its page numbers, so its pages are probably scanned images; OCR is not supported"
		}
		return "the " + name + " contains no text to index besides page numbers"
	}
	if e.format == FormatXPS {
		// XPS is fixed-layout like PDF and is what Windows' scan-to-file
		// writes, so a textless one is most likely scanned pages too.
		return "the " + name + " has no text layer; scanned pages need OCR, which is not supported"
	}
	if !e.format.Paged() {
		return "the " + name + " contains no words to index, only blank space or punctuation"
	}
	return "the " + name + " contains no text to index"
}

func (e *noTextError) Is(target error) bool { return target == ErrNoText }

// errNoText returns the ErrNoText flavour that fits the format: ErrNoText
// itself, which speaks of scanned PDFs, only for PDF.
func errNoText(f Format) error {
	if f == FormatPDF {
		return ErrNoText
	}
	return &noTextError{format: f}
}

// errOnlyPageNumbers is ErrNoText for a document whose extracted text was
// nothing but page numbers.
func errOnlyPageNumbers(f Format) error {
	return &noTextError{format: f, pageNumbersOnly: true}
}
