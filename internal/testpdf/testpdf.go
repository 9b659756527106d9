// Package testpdf makes small text PDFs for tests.
package testpdf

import (
	"bytes"
	"fmt"
	"strings"
)

// Pages writes a small PDF with one page of text per element of pages,
// wrapped at 70 characters, in Helvetica. It is built by hand so that tests
// need no fixture file and no PDF library.
func Pages(pages []string) []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	var kids []string
	for i := range pages {
		kids = append(kids, fmt.Sprintf("%d 0 R", 4+2*i))
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	esc := strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`)
	for i, text := range pages {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		var content strings.Builder
		content.WriteString("BT /F1 12 Tf 16 TL 72 720 Td\n")
		for _, line := range wrapWords(text, 70) {
			fmt.Fprintf(&content, "(%s) Tj T*\n", esc.Replace(line))
		}
		content.WriteString("ET")
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", content.Len(), content.String()))
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}

func wrapWords(text string, width int) []string {
	var lines []string
	var line string
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// GlyphBomb writes a small PDF whose every page draws at least glyphs
// characters of text: a form that writes a line of a hundred letters is
// drawn a hundred times by a second form, which each page draws as often
// as it takes. The file stays a few kilobytes whatever the count, while
// its text is glyphs bytes a page: what a hostile upload sends to make a
// reader's memory explode.
func GlyphBomb(pages, glyphs int) []byte {
	const line, lines = 100, 100 // glyphs a line, lines of the second form
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	stream := func(dict, content string) {
		obj(fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(content), content))
	}
	buf.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	var kids []string
	for i := range pages {
		kids = append(kids, fmt.Sprintf("%d 0 R", 7+i))
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), pages))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	// 4: the form of one line; 5: the form of lines lines; 6: the page's.
	stream("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>",
		fmt.Sprintf("BT /F1 4 Tf 10 10 Td (%s) Tj ET", strings.Repeat("word ", line/5)))
	stream("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /L 4 0 R >> >>",
		strings.Repeat("/L Do\n", lines))
	draws := (glyphs + line*lines - 1) / (line * lines)
	stream("", strings.Repeat("/B Do\n", draws))
	for range pages {
		obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /B 5 0 R >> >> /Contents 6 0 R >>")
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}
