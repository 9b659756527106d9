package pdf

import (
	"context"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzTimeout bounds one fuzz input; a hang shows up as ErrTooSlow rather
// than a stuck fuzzer.
const fuzzTimeout = 10 * time.Second

// FuzzExtract feeds arbitrary bytes to the extraction entry point. Extract
// must never panic or crash, must fail only with the package's sentinel
// errors, and must return well-formed documents when it succeeds.
func FuzzExtract(f *testing.F) {
	pdf := makePDF(numberedPages(3))
	seeds := [][]byte{
		pdf,
		pdf[:len(pdf)/2],
		append(pdf[:len(pdf)-6:len(pdf)-6], "%%EOF\n"...),
		makeImagePDF(),
		encryptPDF(f, pdf, "pw"),
		encryptPDF(f, pdf, ""),
		makeEPUB(f, "fuzz epub text"),
		makeDOCX(f, "fuzz docx text"),
		makeXLSX(f, "fuzz xlsx text"),
		makePPTX(f, "fuzz pptx text"),
		makeXPS(f, "fuzz xps text"),
		makeFB2("fuzz fb2 text"),
		makeMOBI("<p>fuzz mobi text</p>", true),
		makeMOBI("fuzz palmdoc text", false),
		makeZip(f, zipFile{name: "1.png", body: string(pngPixel)}),
		[]byte("<html><body><p>fuzz</p><script>x</script></body></html>"),
		[]byte("# Title\n\n- fuzz markdown\n"),
		[]byte("plain caf\xe9 text"),
		utf16LE("utf16 fuzz"),
		{},
		{0xff, 0xfe, 0x00},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	sentinels := []error{ErrEmpty, ErrUnsupported, ErrEncrypted, ErrCorrupt, ErrNoText, ErrTooSlow}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), fuzzTimeout)
		defer cancel()
		doc, err := Extract(ctx, data)
		if err != nil {
			known := false
			for _, s := range sentinels {
				known = known || errors.Is(err, s)
			}
			if !known {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			if doc != nil {
				t.Fatal("document returned with an error")
			}
			return
		}
		if len(doc.Pages) == 0 {
			t.Fatal("document without pages")
		}
		format, derr := Detect(data)
		if derr != nil || format != doc.Format {
			t.Fatalf("Detect = %q, %v; Extract said %q", format, derr, doc.Format)
		}
		hasText := false
		for i, p := range doc.Pages {
			if doc.Paged && p.Number != i+1 || !doc.Paged && p.Number != 0 {
				t.Fatalf("page %d numbered %d (paged %v)", i, p.Number, doc.Paged)
			}
			if !utf8.ValidString(p.Text) {
				t.Fatalf("page %d is not UTF-8", p.Number)
			}
			hasText = hasText || hasWordChar(p.Text)
		}
		if !hasText {
			t.Fatal("document without text returned without ErrNoText")
		}
	})
}
