package pdf

import (
	"errors"
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
		{"png", pngPixel, "PNG image"},
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
