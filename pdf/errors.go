package pdf

import (
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
	// limit. It is returned together with the context's error, so
	// errors.Is(err, context.DeadlineExceeded) holds as well.
	ErrTooSlow = errors.New("the document took too long to process")
)

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
// otherwise talk about scanned pages that the format does not have.
type noTextError struct{ format Format }

func (e *noTextError) Error() string {
	return fmt.Sprintf("the %s document contains no text to index", e.format)
}

func (e *noTextError) Is(target error) bool { return target == ErrNoText }

// errNoText returns the ErrNoText flavour that fits the format.
func errNoText(f Format) error {
	if f == FormatPDF || f == FormatXPS {
		return ErrNoText
	}
	return &noTextError{format: f}
}
