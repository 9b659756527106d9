package pdf

import (
	"archive/zip"
	"bytes"
	"fmt"
	"path"
	"strings"
)

// Format names a kind of content docsift can index. The value is stable and
// short so it can be stored with a document and shown in the API.
type Format string

// Formats Detect returns. Which Office formats are accepted depends on what
// the MuPDF bundled with go-fitz opens (see officeFormats).
const (
	FormatPDF      Format = "pdf"
	FormatEPUB     Format = "epub"
	FormatXPS      Format = "xps"
	FormatFB2      Format = "fb2"
	FormatMOBI     Format = "mobi"
	FormatDOCX     Format = "docx"
	FormatXLSX     Format = "xlsx"
	FormatPPTX     Format = "pptx"
	FormatText     Format = "text"
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
)

const (
	// pdfHeaderWindow is how far into the file the "%PDF-" header may start.
	// The PDF specification lets readers accept junk before it (some mail
	// gateways and generators prepend bytes), and MuPDF does too.
	pdfHeaderWindow = 1024

	// sniffWindow bounds how much text the content heuristics (HTML, FB2,
	// Markdown) look at, so detection costs the same for any file size.
	sniffWindow = 64 << 10

	// mobiMagicOffset is where a Palm database stores its type and creator,
	// "BOOKMOBI" for MOBI and "TEXtREAd" for plain PalmDOC books.
	mobiMagicOffset = 60
)

// supportedTypes is the human list Supported returns, in the order a user
// is most likely to look for.
var supportedTypes = []string{
	"PDF",
	"EPUB",
	"XPS/OXPS",
	"FictionBook (FB2)",
	"MOBI",
	"Word (DOCX)",
	"Excel (XLSX)",
	"PowerPoint (PPTX)",
	"plain text (UTF-8, UTF-16 with BOM, or Windows-1252)",
	"Markdown",
	"HTML",
}

// Supported lists the types docsift indexes, for 415 messages and the README.
func Supported() []string {
	return append([]string(nil), supportedTypes...)
}

// Paged reports whether extraction of the format yields numbered pages.
// PDF and XPS have fixed pages; reflowable formats (EPUB, FB2, MOBI, Office)
// are laid out by MuPDF at its default page size, so their page numbers are
// stable for a given file but are not the ones a reader app would show.
func (f Format) Paged() bool {
	switch f {
	case FormatText, FormatMarkdown, FormatHTML:
		return false
	}
	return true
}

// magic is a binary signature Detect refuses by name, so the message says
// what the user sent ("PNG image") rather than "binary data".
type magic struct {
	prefix string
	name   string
	reason string
}

var refusedMagics = []magic{
	{"\x89PNG\r\n\x1a\n", "PNG image", "images need OCR, which is not supported"},
	{"\xff\xd8\xff", "JPEG image", "images need OCR, which is not supported"},
	{"GIF87a", "GIF image", "images need OCR, which is not supported"},
	{"GIF89a", "GIF image", "images need OCR, which is not supported"},
	{"II*\x00", "TIFF image", "images need OCR, which is not supported"},
	{"MM\x00*", "TIFF image", "images need OCR, which is not supported"},
	{"BM", "BMP image", "images need OCR, which is not supported"},
	{"RIFF", "RIFF media file", ""},
	{"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Microsoft Office file (.doc/.xls/.ppt)", "save it as PDF or DOCX"},
	{"{\\rtf", "RTF document", "save it as PDF or DOCX"},
	{"Rar!\x1a\x07", "RAR archive", ""},
	{"7z\xbc\xaf\x27\x1c", "7-Zip archive", ""},
	{"\x1f\x8b", "gzip archive", ""},
	{"PK\x05\x06", "empty ZIP archive", ""},
	{"\x7fELF", "executable", ""},
	{"%!PS", "PostScript file", "convert it to PDF"},
}

// Detect returns the format of data judged by its content, never by a file
// name. It returns ErrEmpty for zero bytes, an *UnsupportedError (wrapping
// ErrUnsupported and listing the supported types) for content docsift does
// not index, and ErrCorrupt for a ZIP container it cannot read.
func Detect(data []byte) (Format, error) {
	if len(data) == 0 {
		return "", ErrEmpty
	}
	if pdfHeaderOffset(data) >= 0 {
		return FormatPDF, nil
	}
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		return detectZip(data)
	}
	if isMOBI(data) {
		return FormatMOBI, nil
	}
	for _, m := range refusedMagics {
		if bytes.HasPrefix(data, []byte(m.prefix)) {
			return "", &UnsupportedError{Found: m.name, Reason: m.reason}
		}
	}
	text, ok := decodeText(data[:min(len(data), sniffWindow)], len(data) > sniffWindow)
	if !ok {
		return "", &UnsupportedError{Found: "binary data or an unknown text encoding"}
	}
	return detectText(text)
}

// pdfHeaderOffset returns where "%PDF-" starts within the first
// pdfHeaderWindow bytes, or -1.
func pdfHeaderOffset(data []byte) int {
	return bytes.Index(data[:min(len(data), pdfHeaderWindow)], []byte("%PDF-"))
}

func isMOBI(data []byte) bool {
	if len(data) < mobiMagicOffset+8 {
		return false
	}
	m := string(data[mobiMagicOffset : mobiMagicOffset+8])
	return m == "BOOKMOBI" || m == "TEXtREAd"
}

// detectZip tells the ZIP-based formats apart by looking inside the archive,
// because they share the "PK" signature and differ only in their members:
// EPUB has a "mimetype" member, OOXML a [Content_Types].xml plus a word/,
// xl/ or ppt/ tree, XPS fixed-document parts, and CBZ only images.
func detectZip(data []byte) (Format, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("pdf: read zip archive: %w", ErrCorrupt)
	}
	var (
		names        = make(map[string]bool, len(zr.File))
		contentTypes bool
		word, xl     bool
		ppt, fixed   bool
		images, all  int
		mimetype     string
	)
	for _, f := range zr.File {
		name := strings.ToLower(f.Name)
		names[name] = true
		switch {
		case name == "mimetype":
			mimetype = readSmallMember(f)
		case name == "[content_types].xml":
			contentTypes = true
		case strings.HasPrefix(name, "word/"):
			word = true
		case strings.HasPrefix(name, "xl/"):
			xl = true
		case strings.HasPrefix(name, "ppt/"):
			ppt = true
		case strings.HasSuffix(name, ".fdseq"), strings.HasSuffix(name, ".fpage"):
			fixed = true
		}
		if strings.HasSuffix(name, "/") {
			continue
		}
		all++
		switch path.Ext(name) {
		case ".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".jp2", ".jxr":
			images++
		}
	}
	switch {
	case mimetype == "application/epub+zip" || names["meta-inf/container.xml"] && mimetype == "":
		return FormatEPUB, nil
	case strings.HasPrefix(mimetype, "application/vnd.oasis.opendocument."):
		return "", &UnsupportedError{Found: "OpenDocument file (" + mimetype + ")", Reason: "save it as PDF or DOCX"}
	case fixed:
		return FormatXPS, nil
	case contentTypes && word:
		return officeFormat(FormatDOCX, "Word document")
	case contentTypes && xl:
		return officeFormat(FormatXLSX, "Excel workbook")
	case contentTypes && ppt:
		return officeFormat(FormatPPTX, "PowerPoint presentation")
	case all > 0 && images == all:
		return "", &UnsupportedError{Found: "comic book archive (CBZ)", Reason: "it holds only page images, and images need OCR, which is not supported"}
	}
	return "", &UnsupportedError{Found: "ZIP archive"}
}

// officeFormats says which OOXML formats the bundled MuPDF extracts usefully.
var officeFormats = map[Format]bool{
	FormatDOCX: true,
	FormatXLSX: true,
	FormatPPTX: true,
}

func officeFormat(f Format, name string) (Format, error) {
	if !officeFormats[f] {
		return "", &UnsupportedError{Found: name, Reason: "save it as PDF"}
	}
	return f, nil
}

// readSmallMember returns the trimmed content of a tiny archive member such
// as EPUB's mimetype, reading at most a few bytes so a hostile archive
// cannot make detection expensive.
func readSmallMember(f *zip.File) string {
	const limit = 128
	rc, err := f.Open()
	if err != nil {
		return ""
	}
	defer rc.Close()
	buf := make([]byte, limit)
	n, _ := readFull(rc, buf)
	return strings.TrimSpace(string(buf[:n]))
}

// detectText classifies decoded text as FB2, HTML, Markdown or plain text.
func detectText(text string) (Format, error) {
	head := strings.ToLower(strings.TrimLeft(text, " \t\r\n\ufeff"))
	if strings.HasPrefix(head, "<?xml") || strings.HasPrefix(head, "<fictionbook") {
		switch {
		case strings.Contains(head, "<fictionbook"):
			return FormatFB2, nil
		case strings.Contains(head, "<html"):
			return FormatHTML, nil
		case strings.Contains(head, "<svg"):
			return "", &UnsupportedError{Found: "SVG image"}
		}
		// Other XML is text a person may well want to search; index it as is.
		return FormatText, nil
	}
	if strings.HasPrefix(head, "<svg") {
		return "", &UnsupportedError{Found: "SVG image"}
	}
	if looksLikeHTML(head) {
		return FormatHTML, nil
	}
	if looksLikeMarkdown(text) {
		return FormatMarkdown, nil
	}
	return FormatText, nil
}

// htmlOpeners are the tags an HTML file plausibly starts with; the list
// follows the WHATWG MIME sniffing standard, which browsers use for the
// same decision.
var htmlOpeners = []string{
	"<!doctype html", "<html", "<head", "<script", "<iframe", "<h1", "<div",
	"<font", "<table", "<a", "<style", "<title", "<b", "<body", "<br", "<p",
	"<meta", "<link",
}

// looksLikeHTML reports whether lower-cased, left-trimmed text opens with an
// HTML tag, skipping leading comments.
func looksLikeHTML(head string) bool {
	for strings.HasPrefix(head, "<!--") {
		end := strings.Index(head, "-->")
		if end < 0 {
			return false
		}
		head = strings.TrimLeft(head[end+3:], " \t\r\n")
	}
	for _, tag := range htmlOpeners {
		if !strings.HasPrefix(head, tag) {
			continue
		}
		rest := head[len(tag):]
		if rest == "" || rest[0] == ' ' || rest[0] == '>' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r' || rest[0] == '/' {
			return true
		}
	}
	return false
}
