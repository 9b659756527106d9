package pdf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"io"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	const txt = "Searchable phrase"
	cases := []struct {
		name string
		data []byte
		want Format
	}{
		{"pdf", makePDF(numberedPages(1)), FormatPDF},
		{"pdf after junk", append([]byte("garbage before header\n"), makePDF(numberedPages(1))...), FormatPDF},
		{"epub", makeEPUB(t, txt), FormatEPUB},
		{"docx", makeDOCX(t, txt), FormatDOCX},
		{"xlsx", makeXLSX(t, txt), FormatXLSX},
		{"pptx", makePPTX(t, txt), FormatPPTX},
		{"xps", makeXPS(t, txt), FormatXPS},
		{"fb2", makeFB2(txt), FormatFB2},
		{"mobi", makeMOBI(txt, true), FormatMOBI},
		{"palmdoc", makeMOBI(txt, false), FormatMOBI},
		{"png", pngPixel, FormatPNG},
		{"jpeg", []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), FormatJPEG},
		{"tiff little-endian", []byte("II*\x00\x08\x00\x00\x00"), FormatTIFF},
		{"tiff big-endian", []byte("MM\x00*\x00\x00\x00\x08"), FormatTIFF},
		{"html doctype", []byte("<!DOCTYPE html><html><body><p>hi</p></body></html>"), FormatHTML},
		{"html fragment", []byte("\n  <div class=x>hello</div>"), FormatHTML},
		{"html after comment", []byte("<!-- generated --><html><p>hi</p></html>"), FormatHTML},
		{"xhtml", []byte(xmlHeader + `<html xmlns="http://www.w3.org/1999/xhtml"><body>hi</body></html>`), FormatHTML},
		{"markdown", []byte("# Title\n\nSome *text* with a [link](http://x.org).\n\n- one\n- two\n"), FormatMarkdown},
		{"setext markdown", []byte("Title\n=====\n\n```\ncode\n```\n"), FormatMarkdown},
		{"text", []byte("Just a plain note.\nWith two lines.\n"), FormatText},
		{"text with bom", append([]byte{0xef, 0xbb, 0xbf}, "BOM text"...), FormatText},
		{"utf16le", []byte{0xff, 0xfe, 'h', 0, 'i', 0}, FormatText},
		{"windows-1252", []byte("caf\xe9 cr\xe8me \x93quoted\x94"), FormatText},
		{"plain xml", []byte(xmlHeader + "<notes><n>remember</n></notes>"), FormatText},
		{"a less-than sign", []byte("<about 5 items"), FormatText},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Detect(c.data)
			if err != nil || got != c.want {
				t.Fatalf("Detect = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestDetectRefuses(t *testing.T) {
	cases := []struct {
		name  string
		data  []byte
		found string // expected in the message
	}{
		{"gif", gifPixel(t), "GIF image"},
		{"bmp", bmpPixel(), "BMP image"},
		{"cbz", makeZip(t, zipFile{name: "p1.png", body: string(pngPixel)}, zipFile{name: "p2.jpg", body: "x"}), "CBZ"},
		{"odt", makeZip(t, zipFile{name: "mimetype", body: "application/vnd.oasis.opendocument.text", store: true}), "OpenDocument"},
		{"plain zip", makeZip(t, zipFile{name: "notes.txt", body: "hi"}), "ZIP archive"},
		{"ole2", []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest of an old .doc"), "legacy Microsoft Office"},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "SVG"},
		{"binary", []byte("\x00\x01\x02\x03binary\x00\xff"), "binary data"},
		{"elf", []byte("\x7fELF\x02\x01\x01"), "executable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Detect(c.data)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Detect error = %v, want ErrUnsupported", err)
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("error %T is not *UnsupportedError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.found) {
				t.Errorf("message %q does not name %q", msg, c.found)
			}
			for _, s := range Supported() {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not list supported type %q", msg, s)
				}
			}
		})
	}
}

func TestDetectEmptyAndBrokenZip(t *testing.T) {
	if _, err := Detect(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("Detect(nil) = %v, want ErrEmpty", err)
	}
	epub := makeEPUB(t, "text")
	if _, err := Detect(epub[:len(epub)/2]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Detect(truncated epub) = %v, want ErrCorrupt", err)
	}
}

func TestSupportedIsACopy(t *testing.T) {
	s := Supported()
	s[0] = "changed"
	if Supported()[0] == "changed" {
		t.Fatal("Supported returned its backing array")
	}
}

// bmpPixel is a genuine 1×1 24-bit BMP: file header, BITMAPINFOHEADER and
// one padded pixel row.
func bmpPixel() []byte {
	const headers = 14 + 40
	b := make([]byte, headers+4)
	le := binary.LittleEndian
	copy(b, "BM")
	le.PutUint32(b[2:], uint32(len(b))) // file size
	le.PutUint32(b[10:], headers)       // pixel data offset
	le.PutUint32(b[14:], 40)            // DIB header size
	le.PutUint32(b[18:], 1)             // width
	le.PutUint32(b[22:], 1)             // height
	le.PutUint16(b[26:], 1)             // planes
	le.PutUint16(b[28:], 24)            // bits per pixel
	le.PutUint32(b[34:], 4)             // image size
	b[headers], b[headers+1], b[headers+2] = 0xff, 0x80, 0x00
	return b
}

// riffFile is a genuine RIFF container of the given form type holding one
// chunk, as WAV (WAVE), AVI ("AVI ") and WebP (WEBP) files are.
func riffFile(form, chunkID string, chunk []byte) []byte {
	le := binary.LittleEndian
	b := []byte("RIFF\x00\x00\x00\x00" + form + chunkID + "\x00\x00\x00\x00")
	le.PutUint32(b[16:], uint32(len(chunk)))
	b = append(b, chunk...)
	le.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// wavFile is a genuine PCM WAV file: a "fmt " chunk (mono, 8 kHz, 8-bit)
// followed by a short "data" chunk.
func wavFile() []byte {
	le := binary.LittleEndian
	fmtChunk := make([]byte, 16)
	le.PutUint16(fmtChunk[0:], 1)    // PCM
	le.PutUint16(fmtChunk[2:], 1)    // channels
	le.PutUint32(fmtChunk[4:], 8000) // sample rate
	le.PutUint32(fmtChunk[8:], 8000) // byte rate
	le.PutUint16(fmtChunk[12:], 1)   // block align
	le.PutUint16(fmtChunk[14:], 8)   // bits per sample
	b := riffFile("WAVE", "fmt ", fmtChunk)
	b = append(b, "data\x04\x00\x00\x00\x80\x80\x80\x80"...)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// gifPixel is a genuine 1×1 GIF written by the standard library.
func gifPixel(t testing.TB) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDetectSignaturesNeedTheirStructure checks that a binary signature
// made of printable letters ("BM", "RIFF", "GIF89a", "%PDF-") is believed
// only with the fixed fields that follow it in a real file, so text that
// happens to start with those letters, or mentions a PDF header, is text.
func TestDetectSignaturesNeedTheirStructure(t *testing.T) {
	pdf := makePDF(numberedPages(1))
	cases := []struct {
		name  string
		data  []byte
		want  Format // "" when refused
		found string // expected in the refusal
	}{
		{"text starting BMW", []byte("BMW is a German maker of cars and motorcycles.\n"), FormatText, ""},
		{"text starting BMI", []byte("BMI (body mass index) is weight divided by height squared.\n"), FormatText, ""},
		{"text starting RIFFS", []byte("RIFFS in rock music are short repeated phrases.\n"), FormatText, ""},
		{"text starting GIF89a", []byte("GIF89a is the 1989 revision of the GIF format.\n"), FormatText, ""},
		{"text starting GIF89a with a comma", []byte("GIF89a is fun, and so is GIF87a.\n"), FormatText, ""},
		{"text mentioning a PDF header", []byte("Notes on the format.\nA PDF starts with %PDF-1.7 and ends with %%EOF.\n"), FormatText, ""},
		{"markdown quoting a PDF", []byte("# PDF anatomy\n\n```\n%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n```\n\nThat is all.\n"), FormatMarkdown, ""},
		{"bmp", bmpPixel(), "", "BMP image"},
		{"wav", wavFile(), "", "WAV audio"},
		{"avi", riffFile("AVI ", "LIST", []byte("hdrlavih")), "", "AVI video"},
		{"webp", riffFile("WEBP", "VP8L", []byte("\x2f\x00\x00\x00\x00")), "", "WebP image"},
		{"gif", gifPixel(t), "", "GIF image"},
		{"pdf", pdf, FormatPDF, ""},
		{"pdf after junk", append([]byte("From: scanner@example.com\r\n\r\n"), pdf...), FormatPDF, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Detect(c.data)
			if c.want != "" {
				if err != nil || got != c.want {
					t.Fatalf("Detect = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.found) {
				t.Fatalf("Detect = %q, %v; want a refusal naming %q", got, err, c.found)
			}
		})
	}
}

// TestExtractTextMentioningPDF checks the whole path: such text is indexed,
// not failed as a damaged PDF.
func TestExtractTextMentioningPDF(t *testing.T) {
	text := "Release notes.\nThe exporter now writes %PDF-1.7 headers.\n"
	doc, err := Extract(context.Background(), []byte(text))
	if err != nil {
		t.Fatalf("Extract = %v", err)
	}
	if doc.Format != FormatText || !strings.Contains(doc.Pages[0].Text, "%PDF-1.7 headers") {
		t.Errorf("got %q: %+v", doc.Format, doc.Pages)
	}
}

// mayLink and mayEmph, which spare prose the link and emphasis patterns,
// hold wherever the patterns match.
func TestMarkdownPrechecksKeepEveryMatch(t *testing.T) {
	lines := []string{
		"see [the docs](https://x.org/a) now", "[a](b)", "**bold** text", "__strong__",
		"a `code` span", "x**y**z", "plain prose, with (parentheses) and [brackets]",
		"snake_case_name", "* list", "a [b] (c)", "`", "**", "[x](y z)",
	}
	for _, l := range lines {
		if mdLink.MatchString(l) && !mayLink(l) {
			t.Errorf("%q is a link, and mayLink says it cannot be", l)
		}
		if mdEmph.MatchString(l) && !mayEmph(l) {
			t.Errorf("%q has emphasis, and mayEmph says it cannot", l)
		}
	}
	if mayLink("plain prose, with (parentheses) and [brackets]") || mayEmph("plain prose") {
		t.Error("prose goes through the patterns")
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r    io.ReaderAt
	read int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// Detection reads a sample of an upload, not the upload: what a spooled
// file of tens of megabytes costs to detect is its head and its tail.
func TestDetectAtReadsASample(t *testing.T) {
	big := strings.Repeat("Plain words of a long report. ", 300_000)
	for _, c := range []struct {
		name string
		data string
		want Format
	}{
		{"pdf", "%PDF-1.4\n" + big + "\n%%EOF\n", FormatPDF},
		{"text", big, FormatText},
	} {
		r := &countingReaderAt{r: strings.NewReader(c.data)}
		got, err := DetectAt(r, int64(len(c.data)))
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %s", c.name, got, err, c.want)
		}
		if r.read > sniffWindow+zipEndSearch {
			t.Errorf("%s: detecting %d bytes read %d", c.name, len(c.data), r.read)
		}
	}
}
