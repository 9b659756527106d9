package pdf

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// Fixtures are generated in code rather than checked in, so every test
// input is visible next to the test and carries its expected text.

// pdfWriter assembles a PDF object by object and writes a correct
// cross-reference table, so MuPDF opens the result without repair.
type pdfWriter struct {
	objs []string // objs[i] is object i+1 without its "n 0 obj" wrapper
}

func (w *pdfWriter) add(body string) int {
	w.objs = append(w.objs, body)
	return len(w.objs)
}

func (w *pdfWriter) set(n int, body string) { w.objs[n-1] = body }

func (w *pdfWriter) stream(dict string, data []byte) int {
	return w.add(fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data))
}

func (w *pdfWriter) bytes(root int, trailerExtra string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(w.objs))
	for i, o := range w.objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(w.objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", len(w.objs)+1, root, trailerExtra, xref)
	return b.Bytes()
}

// pdfString escapes s as a PDF literal string.
func pdfString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return "(" + r.Replace(s) + ")"
}

// makePDF returns a PDF whose page i shows pages[i], one text line per
// element, in Helvetica (a standard font, so nothing needs embedding).
func makePDF(pages [][]string) []byte {
	w := &pdfWriter{}
	catalog := w.add("")
	tree := w.add("")
	font := w.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	var kids []string
	for _, lines := range pages {
		var c strings.Builder
		c.WriteString("BT /F1 11 Tf 14 TL 72 740 Td\n")
		for _, l := range lines {
			fmt.Fprintf(&c, "%s Tj T*\n", pdfString(l))
		}
		c.WriteString("ET")
		content := w.stream("", []byte(c.String()))
		page := w.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", tree, font, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	w.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	w.set(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids)))
	return w.bytes(catalog, "")
}

// makeImagePDF returns a one-page PDF that only paints an image, like a
// scan without OCR.
func makeImagePDF() []byte {
	w := &pdfWriter{}
	catalog := w.add("")
	tree := w.add("")
	pixels := bytes.Repeat([]byte{0x00, 0xff, 0x80, 0x40}, 16)
	img := w.stream("/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8", pixels)
	content := w.stream("", []byte("q 400 0 0 400 100 200 cm /Im1 Do Q"))
	page := w.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>", tree, img, content))
	w.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	w.set(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page))
	return w.bytes(catalog, "")
}

// pageText is the known text of page n (1-based) in numberedPages.
func pageText(n int) []string {
	return []string{
		fmt.Sprintf("Running header of the fixture %d", n),
		fmt.Sprintf("This is page %s of the generated document.", numberWords[n%len(numberWords)]),
		fmt.Sprintf("Unique marker zq%dx appears only here.", n),
		fmt.Sprintf("%d", n),
	}
}

var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// numberedPages returns n pages of pageText.
func numberedPages(n int) [][]string {
	pages := make([][]string, n)
	for i := range pages {
		pages[i] = pageText(i + 1)
	}
	return pages
}

// zipFile is one member of a generated archive.
type zipFile struct {
	name, body string
	store      bool // stored uncompressed, as EPUB requires for mimetype
}

func makeZip(t testing.TB, files ...zipFile) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range files {
		method := zip.Deflate
		if f.store {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

func makeEPUB(t testing.TB, text string) []byte {
	return makeZip(t,
		zipFile{name: "mimetype", body: "application/epub+zip", store: true},
		zipFile{name: "META-INF/container.xml", body: xmlHeader + `<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`},
		zipFile{name: "OEBPS/content.opf", body: xmlHeader + `<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">fixture</dc:identifier><dc:title>Fixture</dc:title><dc:language>en</dc:language></metadata><manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c1"/></spine></package>`},
		zipFile{name: "OEBPS/c1.xhtml", body: xmlHeader + `<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter</title></head><body><h1>Chapter one</h1><p>` + text + `</p></body></html>`},
	)
}

func makeDOCX(t testing.TB, text string) []byte {
	return makeZip(t,
		zipFile{name: "[Content_Types].xml", body: xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		zipFile{name: "_rels/.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		zipFile{name: "word/_rels/document.xml.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>`},
		zipFile{name: "word/document.xml", body: xmlHeader + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>` + text + `</w:t></w:r></w:p><w:p><w:r><w:t>Second paragraph.</w:t></w:r></w:p></w:body></w:document>`},
	)
}

func makeXLSX(t testing.TB, text string) []byte {
	return makeZip(t,
		zipFile{name: "[Content_Types].xml", body: xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`},
		zipFile{name: "_rels/.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		zipFile{name: "xl/workbook.xml", body: xmlHeader + `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		zipFile{name: "xl/_rels/workbook.xml.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		zipFile{name: "xl/sharedStrings.xml", body: xmlHeader + `<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1"><si><t>` + text + `</t></si></sst>`},
		zipFile{name: "xl/worksheets/sheet1.xml", body: xmlHeader + `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1"><v>42</v></c></row></sheetData></worksheet>`},
	)
}

func makePPTX(t testing.TB, text string) []byte {
	return makeZip(t,
		zipFile{name: "[Content_Types].xml", body: xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/><Override PartName="/ppt/slides/slide1.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/></Types>`},
		zipFile{name: "_rels/.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>`},
		zipFile{name: "ppt/presentation.xml", body: xmlHeader + `<p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:sldIdLst><p:sldId id="256" r:id="rId1"/></p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/></p:presentation>`},
		zipFile{name: "ppt/_rels/presentation.xml.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/></Relationships>`},
		zipFile{name: "ppt/slides/slide1.xml", body: xmlHeader + `<p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody><a:p><a:r><a:t>` + text + `</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>`},
	)
}

func makeXPS(t testing.TB, text string) []byte {
	return makeZip(t,
		zipFile{name: "[Content_Types].xml", body: xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="fdseq" ContentType="application/vnd.ms-package.xps-fixeddocumentsequence+xml"/><Default Extension="fdoc" ContentType="application/vnd.ms-package.xps-fixeddocument+xml"/><Default Extension="fpage" ContentType="application/vnd.ms-package.xps-fixedpage+xml"/></Types>`},
		zipFile{name: "_rels/.rels", body: xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="R1" Type="http://schemas.microsoft.com/xps/2005/06/fixedrepresentation" Target="/FixedDocSeq.fdseq"/></Relationships>`},
		zipFile{name: "FixedDocSeq.fdseq", body: `<FixedDocumentSequence xmlns="http://schemas.microsoft.com/xps/2005/06"><DocumentReference Source="/Documents/1/FixedDoc.fdoc"/></FixedDocumentSequence>`},
		zipFile{name: "Documents/1/FixedDoc.fdoc", body: `<FixedDocument xmlns="http://schemas.microsoft.com/xps/2005/06"><PageContent Source="/Documents/1/Pages/1.fpage"/></FixedDocument>`},
		zipFile{name: "Documents/1/Pages/1.fpage", body: `<FixedPage xmlns="http://schemas.microsoft.com/xps/2005/06" Width="816" Height="1056" xml:lang="en-US"><Glyphs OriginX="96" OriginY="96" FontRenderingEmSize="16" FontUri="/Resources/missing.ttf" UnicodeString="` + text + `" Fill="#FF000000"/></FixedPage>`},
	)
}

func makeFB2(text string) []byte {
	return []byte(xmlHeader + `<FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0"><description><title-info><book-title>Fixture</book-title></title-info></description><body><section><title><p>Chapter one</p></title><p>` + text + `</p></section></body></FictionBook>`)
}

// makeMOBI returns a PalmDB book holding text in one uncompressed record:
// a plain PalmDOC ("TEXtREAd") book when mobi is false, a MOBI book
// ("BOOKMOBI", UTF-8, minimal MOBI header) when it is true.
func makeMOBI(text string, mobi bool) []byte {
	body := []byte(text)
	var rec0 bytes.Buffer
	be := binary.BigEndian
	binary.Write(&rec0, be, uint16(1)) // no compression
	binary.Write(&rec0, be, uint16(0))
	binary.Write(&rec0, be, uint32(len(body)))
	binary.Write(&rec0, be, uint16(1))    // text records
	binary.Write(&rec0, be, uint16(4096)) // record size
	binary.Write(&rec0, be, uint16(0))    // no encryption
	binary.Write(&rec0, be, uint16(0))
	if mobi {
		const headerLen = 0xe8
		h := make([]byte, headerLen)
		copy(h, "MOBI")
		be.PutUint32(h[4:], headerLen)
		be.PutUint32(h[8:], 2)      // book
		be.PutUint32(h[12:], 65001) // UTF-8
		be.PutUint32(h[16:], 1)     // unique id
		be.PutUint32(h[20:], 6)     // file version
		for i := 24; i < 64; i += 4 {
			be.PutUint32(h[i:], 0xffffffff) // no index records
		}
		be.PutUint32(h[64:], 1) // first non-book record
		be.PutUint32(h[92:], 1)
		be.PutUint32(h[96:], 0)
		be.PutUint32(h[128:], 0) // no EXTH
		be.PutUint32(h[0xc0-16:], 1)
		be.PutUint32(h[0xc4-16:], 1)
		rec0.Write(h)
	}
	const nrec = 2
	headerSize := 78 + 8*nrec + 2
	var b bytes.Buffer
	name := make([]byte, 32)
	copy(name, "fixture")
	b.Write(name)
	b.Write(make([]byte, 2+2+4+4+4+4+4+4))
	if mobi {
		b.WriteString("BOOKMOBI")
	} else {
		b.WriteString("TEXtREAd")
	}
	b.Write(make([]byte, 4+4))
	binary.Write(&b, be, uint16(nrec))
	off := headerSize
	for i, r := range [][]byte{rec0.Bytes(), body} {
		binary.Write(&b, be, uint32(off))
		binary.Write(&b, be, uint32(i))
		off += len(r)
	}
	b.Write([]byte{0, 0})
	b.Write(rec0.Bytes())
	b.Write(body)
	return b.Bytes()
}

// pngPixel is a 1×1 PNG, for image-only archives.
var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
