package pdf

import (
	"errors"
	"fmt"
)

// A small file can unfold into far more text than it holds: a PDF whose
// pages reuse a form that draws millions of glyphs, a book laid out into
// a hundred thousand pages, an Office file whose XML inflates a
// thousandfold. What a document may cost to read is bounded twice: the
// worker stops reading at a limit, and the parent, which holds the text
// while it is chunked and embedded, counts again as pages arrive and
// stops reading the worker's output past the same limits, whatever the
// worker says.
const (
	// DefaultMaxPages: a long manual or a year of minutes has a few
	// thousand pages; past ten thousand a document is an archive of
	// documents, better uploaded one by one.
	DefaultMaxPages = 10_000
	// DefaultMaxPageText: a dense page of prose holds 3–6 KB of text and a
	// spreadsheet laid out as a page a few hundred KB; a page of a
	// megabyte is a drawing of glyphs, not text anyone wrote.
	DefaultMaxPageText = 1 << 20
	// DefaultMaxText bounds a document's text: 30 MB is ten thousand
	// pages of dense prose. The parent holds some five times a document's
	// text while it chunks, embeds and indexes it (see ingest), so each
	// job running may cost it up to about 160 MiB.
	DefaultMaxText = 32 << 20
)

// Zip-based formats (DOCX, XLSX, PPTX, EPUB, XPS) are checked before MuPDF
// unpacks them: their members are inflated and counted in the worker,
// where MuPDF would inflate them anyway, without keeping what they hold.
const (
	// maxZipMembers: an EPUB with every image and font of a book holds a
	// few thousand; the format's own limit without extensions is 65,535.
	maxZipMembers = 20_000
	// maxUnzipped bounds the members' inflated size together, well under
	// the worker's address space (workerMemoryLimit), which MuPDF needs
	// several times the XML's size of.
	maxUnzipped = 512 << 20
	// maxZipRatio bounds how much one member may inflate, once it is over
	// zipRatioFloor: XML compresses ten to thirty times, an image barely
	// at all; a member a thousand times its compressed size is a bomb.
	maxZipRatio   = 200
	zipRatioFloor = 1 << 20
)

// Limits bound the work one document may cost. The zero value of each
// field takes its default.
type Limits struct {
	Pages    int   // pages read
	PageText int   // bytes of text of one page
	Text     int64 // bytes of text of the whole document
}

func (l Limits) withDefaults() Limits {
	if l.Pages <= 0 {
		l.Pages = DefaultMaxPages
	}
	if l.PageText <= 0 {
		l.PageText = DefaultMaxPageText
	}
	if l.Text <= 0 {
		l.Text = DefaultMaxText
	}
	return l
}

// ErrTooLarge means a document is over one of the limits on what reading
// it may cost. Errors wrapping it name the limit and the flag that sets it.
var ErrTooLarge = errors.New("the document is too large to index")

// limitError is ErrTooLarge with a message naming the limit.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func (e *limitError) Is(target error) bool { return target == ErrTooLarge }

func errTooManyPages(pages, limit int) error {
	return &limitError{fmt.Sprintf("the document has %d pages, over the limit of %d pages a document (--max-document-pages): split it into smaller files", pages, limit)}
}

func errPageTooLong(page, limit int) error {
	return &limitError{fmt.Sprintf("page %d holds more than %s of text, over the limit for one page (--max-page-text); such a page is usually drawn glyph by glyph rather than written", page, byteCount(int64(limit)))}
}

func errTextTooLong(limit int64) error {
	return &limitError{fmt.Sprintf("the document holds more than %s of text, over the limit for one document (--max-document-text): split it into smaller files", byteCount(limit))}
}

func errUnpacksTooLarge(why string) error {
	return &limitError{"the file unpacks to more than it can be read in: " + why}
}

// byteCount writes n bytes for people: 1 MiB, 32 MiB, 512 KiB.
func byteCount(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
