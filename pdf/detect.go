package pdf

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"regexp"
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
	FormatPNG      Format = "png"
	FormatJPEG     Format = "jpeg"
	FormatTIFF     Format = "tiff"
	FormatText     Format = "text"
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
)

const (
	// pdfHeaderWindow is how far into the file the "%PDF-" header may start.
	// The PDF specification lets readers accept junk before it (some mail
	// gateways and generators prepend bytes), and MuPDF does too. But text
	// that mentions "%PDF-" is far more common than a PDF with junk in
	// front, so a header after offset 0 is believed only with PDF structure
	// around it (see pdfHeaderOffset).
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
	"PNG, JPEG and TIFF images (read with OCR)",
	"plain text (UTF-8, UTF-16 with BOM, or Windows-1252)",
	"Markdown",
	"HTML",
}

// Supported lists the types docsift indexes, for 415 messages and docs/api.md.
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

// IsImage reports whether the format is a raster image, whose text can only
// be read with OCR.
func (f Format) IsImage() bool {
	switch f {
	case FormatPNG, FormatJPEG, FormatTIFF:
		return true
	}
	return false
}

// mayHoldScans reports whether pages of the format can be images of text,
// which are read with OCR: fixed-layout documents (PDF, and XPS, which is
// what Windows' scan-to-file writes) and images. Reflowable formats are
// laid out from their text, so a page of them without text has none.
func (f Format) mayHoldScans() bool {
	return f == FormatPDF || f == FormatXPS || f.IsImage()
}

// imageMagics are the signatures of the images docsift reads with OCR:
// those scanners and phones write, and MuPDF opens (TIFF with all its
// pages). Each is binary (a NUL or a byte above 0x7f in its first four),
// so no text starts with one.
var imageMagics = []struct {
	prefix string
	format Format
}{
	{"\x89PNG\r\n\x1a\n", FormatPNG},
	{"\xff\xd8\xff", FormatJPEG},
	{"II*\x00", FormatTIFF},
	{"MM\x00*", FormatTIFF},
}

// magic is a binary signature Detect refuses by name, so the message says
// what the user sent ("PNG image") rather than "binary data".
type magic struct {
	prefix string
	name   string
	reason string
	// valid, when set, checks the fixed fields that follow the prefix. It
	// is set for prefixes made of printable characters ("BM", "RIFF",
	// "GIF89a"), which text can start with ("BMW is…"); such content is
	// also only refused when it does not read as text (see Detect).
	valid func(head []byte, size int64) bool
}

// otherImage is why images other than PNG, JPEG and TIFF are refused.
const otherImage = "only PNG, JPEG and TIFF images are read with OCR: convert it to PNG"

var refusedMagics = []magic{
	{"GIF87a", "GIF image", otherImage, isGIF},
	{"GIF89a", "GIF image", otherImage, isGIF},
	{"BM", "BMP image", otherImage, isBMP},
	{"RIFF", "WAV audio", "", isRIFF("WAVE")},
	{"RIFF", "AVI video", "", isRIFF("AVI ")},
	{"RIFF", "WebP image", otherImage, isRIFF("WEBP")},
	{"RIFF", "RIFF media file", "", isRIFF("")},
	{"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Microsoft Office file (.doc/.xls/.ppt)", "save it as PDF or DOCX", nil},
	{"{\\rtf", "RTF document", "save it as PDF or DOCX", nil},
	{"Rar!\x1a\x07", "RAR archive", "", nil},
	{"7z\xbc\xaf\x27\x1c", "7-Zip archive", "", nil},
	{"\x1f\x8b", "gzip archive", "", nil},
	{"PK\x05\x06", "empty ZIP archive", "", nil},
	{"\x7fELF", "executable", "", nil},
	{"%!PS", "PostScript file", "convert it to PDF", nil},
}

// bmpHeaderSizes are the DIB header sizes BMP writers use (BITMAPCOREHEADER,
// BITMAPINFOHEADER and its V2–V5 successors, OS/2 2.x).
var bmpHeaderSizes = map[uint32]bool{12: true, 16: true, 40: true, 52: true, 56: true, 64: true, 108: true, 124: true}

// isBMP checks the BMP file header after "BM": two reserved 16-bit fields
// that are zero, a pixel data offset past the headers, and a known DIB
// header size. The file size field is not trusted, since some writers
// leave it zero.
func isBMP(data []byte, _ int64) bool {
	if len(data) < 18 {
		return false
	}
	le := binary.LittleEndian
	dib := le.Uint32(data[14:])
	return le.Uint32(data[6:]) == 0 && bmpHeaderSizes[dib] && le.Uint32(data[10:]) >= 14+dib
}

// isRIFF returns a check for a RIFF container of the given form type: the
// type follows the 32-bit size at offset 8. An empty form accepts any type
// but then requires the size field to match the data exactly, which text
// cannot do (its four bytes read as at least 0x20202020, half a gigabyte).
func isRIFF(form string) func([]byte, int64) bool {
	return func(data []byte, total int64) bool {
		if len(data) < 12 {
			return false
		}
		size := binary.LittleEndian.Uint32(data[4:])
		if form == "" {
			return uint64(size)+8 == uint64(total)
		}
		return string(data[8:12]) == form && size >= 4
	}
}

// isGIF checks the logical screen descriptor after "GIF87a"/"GIF89a"
// (width, height, flags, background colour, aspect ratio), skips the
// global colour table the flags announce, and requires the next byte to
// open a block: an extension ('!'), an image (',') or the trailer (';').
func isGIF(data []byte, _ int64) bool {
	const screen = 6 + 7
	if len(data) < screen+1 {
		return false
	}
	next := screen
	if flags := data[10]; flags&0x80 != 0 {
		next += 3 << (flags&0x07 + 1)
	}
	if next >= len(data) {
		return false
	}
	switch data[next] {
	case '!', ',', ';':
		return true
	}
	return false
}

// Detect returns the format of data judged by its content, never by a file
// name. It returns ErrEmpty for zero bytes, an *UnsupportedError (wrapping
// ErrUnsupported and listing the supported types) for content docsift does
// not index, and ErrCorrupt for a ZIP container it cannot read.
func Detect(data []byte) (Format, error) {
	return DetectAt(bytes.NewReader(data), int64(len(data)))
}

// DetectAt is Detect for content of size bytes read through r: a file as
// it was spooled from an upload, of which it reads the head, the tail and,
// for a ZIP container, the directory.
func DetectAt(r io.ReaderAt, size int64) (Format, error) {
	if size == 0 {
		return "", ErrEmpty
	}
	s, err := sampleOf(r, size)
	if err != nil {
		return "", fmt.Errorf("pdf: read the upload: %w", err)
	}
	if pdfHeaderOffset(s.head, s.tail) >= 0 {
		return FormatPDF, nil
	}
	if bytes.HasPrefix(s.head, []byte("PK\x03\x04")) {
		return detectZip(r, size, s.tail)
	}
	if isMOBI(s.head) {
		return FormatMOBI, nil
	}
	for _, m := range imageMagics {
		if bytes.HasPrefix(s.head, []byte(m.prefix)) {
			return m.format, nil
		}
	}
	text, ok := decodeText(s.head[:min(len(s.head), sniffWindow)], size > sniffWindow)
	for _, m := range refusedMagics {
		if !bytes.HasPrefix(s.head, []byte(m.prefix)) {
			continue
		}
		// A printable signature is only a coincidence when the content
		// reads as text or lacks the fields a real file has after it.
		if m.valid != nil && (ok || !m.valid(s.head, size)) {
			continue
		}
		return "", &UnsupportedError{Found: m.name, Reason: m.reason}
	}
	if !ok {
		return "", &UnsupportedError{Found: "binary data or an unknown text encoding"}
	}
	return detectText(text)
}

// sample is what detection reads of content: its first sniffWindow bytes
// and its last zipEndSearch (the end of a PDF, the directory's end record
// of a ZIP archive). For short content they overlap.
type sample struct {
	head, tail []byte
}

func sampleOf(r io.ReaderAt, size int64) (sample, error) {
	read := func(off int64, n int64) ([]byte, error) {
		b := make([]byte, n)
		if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
			return nil, err
		}
		return b, nil
	}
	head, err := read(0, min(size, sniffWindow))
	if err != nil {
		return sample{}, err
	}
	tailStart := max(0, size-zipEndSearch)
	if tailStart == 0 && int64(len(head)) == size {
		return sample{head: head, tail: head}, nil
	}
	tail, err := read(tailStart, size-tailStart)
	if err != nil {
		return sample{}, err
	}
	return sample{head: head, tail: tail}, nil
}

var (
	// pdfVersionHeader is the header line of a PDF: "%PDF-1.7", "%PDF-2.0".
	pdfVersionHeader = regexp.MustCompile(`%PDF-[12]\.[0-9]`)
	// pdfObjectHeader opens an indirect object ("1 0 obj"), which follows
	// the header of any PDF within a few lines.
	pdfObjectHeader = regexp.MustCompile(`(?:^|[^0-9])[0-9]{1,10}[ \t\r\n]+[0-9]{1,5}[ \t\r\n]+obj\b`)
)

// pdfHeaderOffset returns where a PDF starts, or -1. A "%PDF-" at offset 0
// is a PDF (a damaged one still gets ErrCorrupt rather than being indexed
// as text). Later in the first pdfHeaderWindow bytes it is believed only
// when it is a real version header followed by an indirect object and the
// file ends with a "%%EOF" marker: junk-prefixed PDFs have all three, while
// notes, mails and Markdown that mention "%PDF-1.7" do not.
func pdfHeaderOffset(head, tail []byte) int {
	if bytes.HasPrefix(head, []byte("%PDF-")) {
		return 0
	}
	loc := pdfVersionHeader.FindIndex(head[:min(len(head), pdfHeaderWindow)])
	if loc == nil {
		return -1
	}
	after := head[loc[1]:min(len(head), loc[1]+pdfHeaderWindow)]
	if !pdfObjectHeader.Match(after) || !hasPDFTrailer(tail) {
		return -1
	}
	return loc[0]
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
func detectZip(r io.ReaderAt, size int64, tail []byte) (Format, error) {
	zr, err := openZip(r, size, tail)
	if err != nil {
		return "", err
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
		return "", &UnsupportedError{Found: "comic book archive (CBZ)", Reason: "it holds only page images: upload them as PNG or JPEG files, or as one PDF"}
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
