//go:build hostile

package hostile

import (
	"archive/zip"
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// pdfFile writes a PDF by hand, object by object, so that the suite can
// make the documents it attacks with (pages of noise for OCR, pages
// sharing one large image, padding) without a PDF library.
type pdfFile struct {
	objs [][]byte // by object number - 1
}

// reserve returns the number of an object written later with set.
func (p *pdfFile) reserve() int {
	p.objs = append(p.objs, nil)
	return len(p.objs)
}

func (p *pdfFile) set(n int, body string) { p.objs[n-1] = []byte(body) }

func (p *pdfFile) add(body string) int {
	n := p.reserve()
	p.set(n, body)
	return n
}

// stream adds a stream object of data with dict's entries.
func (p *pdfFile) stream(dict string, data []byte) int {
	n := p.reserve()
	p.objs[n-1] = fmt.Appendf(nil, "<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
	return n
}

// bytes writes the file with its cross-reference table.
func (p *pdfFile) bytes(root int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(p.objs))
	for i, o := range p.objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(p.objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(p.objs)+1, root, xref)
	return b.Bytes()
}

// pageSpec is one page of pagesPDF: its text (none when empty), and the
// image it draws over the whole page (none when 0).
type pageSpec struct {
	text  string
	image int
}

// pagesPDF writes pages of w×h points; images are added beforehand with
// noiseImage.
func (p *pdfFile) pagesPDF(w, h int, pages []pageSpec) []byte {
	catalog, tree := p.reserve(), p.reserve()
	font := p.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	var kids []string
	for _, pg := range pages {
		var content strings.Builder
		xobjects := ""
		if pg.image != 0 {
			fmt.Fprintf(&content, "q %d 0 0 %d 0 0 cm /Im Do Q\n", w, h)
			xobjects = fmt.Sprintf("/XObject << /Im %d 0 R >>", pg.image)
		}
		if pg.text != "" {
			esc := strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(pg.text)
			fmt.Fprintf(&content, "BT /F1 10 Tf 20 %d Td (%s) Tj ET\n", h-30, esc)
		}
		c := p.stream("", []byte(content.String()))
		kids = append(kids, fmt.Sprintf("%d 0 R", p.add(fmt.Sprintf(
			"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R >> %s >> /Contents %d 0 R >>",
			tree, w, h, font, xobjects, c))))
	}
	p.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	p.set(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	return p.bytes(catalog)
}

// noiseImage adds a w×h grey image of random pixels, stored as it is
// (noise does not compress): w*h bytes in the file.
func (p *pdfFile) noiseImage(w, h int, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	px := make([]byte, w*h)
	for i := 0; i < len(px); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(px); j++ {
			px[i+j] = byte(v >> (8 * j))
		}
	}
	return p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8", w, h), px)
}

// paddedPDF is a one-page PDF of text carrying pad bytes in an object no
// page uses: a large upload that costs little to read.
func paddedPDF(text string, pad int) []byte {
	var p pdfFile
	p.stream("", bytes.Repeat([]byte("% padding\n"), pad/10))
	return p.pagesPDF(612, 792, []pageSpec{{text: text}})
}

// docxBomb is a DOCX whose document.xml holds a paragraph of spaces
// unpacking to spaces bytes: a few tens of KiB that inflate a
// thousandfold.
func docxBomb(t *testing.T, spaces int) []byte {
	t.Helper()
	const header = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	member := func(name, body string) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	member("[Content_Types].xml", header+`<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	member("_rels/.rels", header+`<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`)
	member("word/_rels/document.xml.rels", header+`<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>`)
	w, err := zw.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(header + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t xml:space="preserve">`))
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for n := spaces; n > 0; n -= len(chunk) {
		w.Write(chunk[:min(n, len(chunk))])
	}
	w.Write([]byte(`</w:t></w:r></w:p></w:body></w:document>`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
