package pdf

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// allFormats lists every Format Detect can return.
var allFormats = []Format{
	FormatPDF, FormatEPUB, FormatXPS, FormatFB2, FormatMOBI, FormatDOCX,
	FormatXLSX, FormatPPTX, FormatPNG, FormatJPEG, FormatTIFF, FormatText,
	FormatMarkdown, FormatHTML,
}

// TestNoTextMessageFitsFormat checks that the no-text error speaks of
// scanned pages and OCR only for the formats that can hold scans
// (fixed-layout documents and images), and otherwise names the kind of
// file the user sent.
func TestNoTextMessageFitsFormat(t *testing.T) {
	names := map[Format]string{
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
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			err := errNoText(f)
			if !errors.Is(err, ErrNoText) {
				t.Fatalf("errNoText(%s) = %v, does not wrap ErrNoText", f, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, names[f]) {
				t.Errorf("message %q does not name %q", msg, names[f])
			}
			scans := f == FormatPDF || f == FormatXPS || f.IsImage()
			if got := strings.Contains(msg, "OCR") || strings.Contains(msg, "scanned"); got != scans {
				t.Errorf("message %q mentions scans/OCR: %v, want %v", msg, got, scans)
			}
			if f != FormatPDF && strings.Contains(msg, "PDF") {
				t.Errorf("message %q talks about PDFs", msg)
			}
		})
	}
}

// makeEmptyDOCX is a valid Word document whose paragraphs hold no text.
func makeEmptyDOCX(t testing.TB) []byte {
	return makeZip(t,
		zipFile{name: "[Content_Types].xml", body: xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		zipFile{name: "_rels/.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		zipFile{name: "word/_rels/document.xml.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>`},
		zipFile{name: "word/document.xml", body: xmlHeader + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p/><w:p><w:r><w:t xml:space="preserve">   </w:t></w:r></w:p></w:body></w:document>`},
	)
}

func TestExtractDOCXWithoutText(t *testing.T) {
	_, err := Extract(context.Background(), makeEmptyDOCX(t))
	if !errors.Is(err, ErrNoText) {
		t.Fatalf("Extract = %v, want ErrNoText", err)
	}
	if msg := err.Error(); strings.Contains(msg, "PDF") || strings.Contains(msg, "OCR") || !strings.Contains(msg, "Word document") {
		t.Errorf("message %q should name a Word document, not scanned PDFs", msg)
	}
}

// TestNoTextMessageNamesPageNumbers checks the no-text error of a document
// whose only text is its page numbers (scans stamped with numbers): the
// text layer exists, so the message says what it holds.
func TestNoTextMessageNamesPageNumbers(t *testing.T) {
	pages := [][]string{{"Page 1 of 3"}, {"Page 2 of 3"}, {"Page 3 of 3"}}
	_, err := Extract(context.Background(), makePDF(pages))
	if !errors.Is(err, ErrNoText) {
		t.Fatalf("Extract = %v, want ErrNoText", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "page numbers") || strings.Contains(msg, "no text layer") {
		t.Errorf("message %q should say the only text is page numbers", msg)
	}
	_, err = Extract(context.Background(), makeImagePDF())
	if !errors.Is(err, ErrNoText) {
		t.Fatalf("image-only PDF: got %v, want ErrNoText", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "no text layer") || !strings.Contains(msg, "OCR") {
		t.Errorf("image-only PDF: message %q should say it has no text layer and what OCR did", msg)
	}
}
