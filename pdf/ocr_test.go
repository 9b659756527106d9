package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/image/tiff"
)

// OCR tests run the real Tesseract on scans made here: pages of the shared
// PDFs rendered by MuPDF at a scanner's resolution and wrapped in an
// image-only PDF, or saved as images. Tests of what happens when Tesseract
// is missing, slow or broken use PATH or a stand-in script instead.

// tesseractInstalled reports whether the tesseract command is in PATH.
func tesseractInstalled() bool {
	_, err := exec.LookPath("tesseract")
	return err == nil
}

// requireTesseract skips a test that needs Tesseract where it is not
// installed; in CI, which installs it (.ci/run), that is a failure, so the
// OCR tests cannot pass there by skipping.
func requireTesseract(t testing.TB) {
	t.Helper()
	if tesseractInstalled() {
		return
	}
	const msg = "tesseract not installed (Debian: apt-get install tesseract-ocr tesseract-ocr-eng)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must run the OCR tests")
	}
	t.Skip(msg + "; skipping")
}

// words collapses whitespace, so phrases can be looked for across OCR's
// line breaks.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// scanOf renders pages (0-based) of a shared PDF at dpi into an image-only
// PDF, as a scanner would write it.
func scanOf(t testing.TB, name string, pages []int, dpi float64) []byte {
	t.Helper()
	numbers := make([]int, len(pages))
	for i, p := range pages {
		numbers[i] = p + 1
	}
	scan, err := ScanPages(context.Background(), realPDF(t, name), numbers, int(dpi), FormatPDF)
	if err != nil {
		t.Fatal(err)
	}
	return scan
}

// blankScan is an image-only PDF of n small white pages with a speck each:
// enough for the tests whose Tesseract is a stand-in that ignores the
// pixels.
func blankScan(n int) []byte {
	imgs := make([]*image.Gray, n)
	for i := range imgs {
		imgs[i] = image.NewGray(image.Rect(0, 0, 60, 60))
		for p := range imgs[i].Pix {
			imgs[i].Pix[p] = 0xff
		}
		// A speck, so that the page is not one tone (which OCR skips)
		// and reaches Tesseract.
		imgs[i].Pix[60*30+30] = 0
	}
	return writeScanPDF(imgs, 72)
}

// uniformScan is a scan of n pages of blank paper: one tone each.
func uniformScan(n int) []byte {
	imgs := make([]*image.Gray, n)
	for i := range imgs {
		imgs[i] = image.NewGray(image.Rect(0, 0, 60, 60))
		for p := range imgs[i].Pix {
			imgs[i].Pix[p] = 0xf0 + byte(p%8) // paper, with a scanner's noise
		}
	}
	return writeScanPDF(imgs, 72)
}

// progressLog records the calls of Options.Progress.
type progressLog struct{ calls [][2]int }

func (p *progressLog) report(done, total int) { p.calls = append(p.calls, [2]int{done, total}) }

// check verifies that progress went from 0 to total pages, one page at a
// time.
func (p *progressLog) check(t *testing.T, total int) {
	t.Helper()
	want := make([][2]int, total+1)
	for i := range want {
		want[i] = [2]int{i, total}
	}
	if !slices.Equal(p.calls, want) {
		t.Errorf("progress reports %v, want %v", p.calls, want)
	}
}

// TestOCRScannedPDF reads three scanned pages of the Bash manual, at the
// two resolutions scanners offer: the phrase known to be on the middle
// page is found there, and only there, so chunks cite the right page.
func TestOCRScannedPDF(t *testing.T) {
	requireTesseract(t)
	const phrase = "not treated specially and do not" // bashref.pdf page 70
	for _, dpi := range []float64{200, 300} {
		t.Run(fmt.Sprintf("%.0fdpi", dpi), func(t *testing.T) {
			scan := scanOf(t, "bashref.pdf", []int{68, 69, 70}, dpi)
			if f, err := Detect(scan); f != FormatPDF || err != nil {
				t.Fatalf("Detect(scan) = %q, %v", f, err)
			}
			var progress progressLog
			doc, err := ExtractWith(context.Background(), FormatPDF, scan, Options{Progress: progress.report})
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Pages) != 3 || doc.OCRPages != 3 || len(doc.Unread) != 0 {
				t.Fatalf("got %d pages, %d by OCR, unread %v; want 3, 3, none", len(doc.Pages), doc.OCRPages, doc.Unread)
			}
			for _, p := range doc.Pages {
				if has := strings.Contains(words(p.Text), phrase); has != (p.Number == 2) {
					t.Errorf("phrase %q on page %d: %v\n%s", phrase, p.Number, has, p.Text)
				}
			}
			progress.check(t, 3)
		})
	}
}

// TestOCRImageUploads reads a page saved as PNG, JPEG and TIFF: each is
// detected from its bytes and read at its own resolution.
func TestOCRImageUploads(t *testing.T) {
	requireTesseract(t)
	const phrase = "array is a vector created by" // libtasn1.pdf page 12
	imgs, err := renderGrey(realPDF(t, "libtasn1.pdf"), []int{11}, 200)
	if err != nil {
		t.Fatal(err)
	}
	encoders := []struct {
		format Format
		encode func(*bytes.Buffer, image.Image) error
	}{
		{FormatPNG, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }},
		{FormatJPEG, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, &jpeg.Options{Quality: 85}) }},
		{FormatTIFF, func(b *bytes.Buffer, m image.Image) error {
			return tiff.Encode(b, m, &tiff.Options{Compression: tiff.Deflate})
		}},
	}
	for _, e := range encoders {
		t.Run(string(e.format), func(t *testing.T) {
			var b bytes.Buffer
			if err := e.encode(&b, imgs[0]); err != nil {
				t.Fatal(err)
			}
			doc, err := Extract(context.Background(), b.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != e.format || !doc.Paged || len(doc.Pages) != 1 || doc.Pages[0].Number != 1 || doc.OCRPages != 1 {
				t.Fatalf("got format %q, paged %v, %d pages (%d by OCR)", doc.Format, doc.Paged, len(doc.Pages), doc.OCRPages)
			}
			if !strings.Contains(words(doc.Pages[0].Text), phrase) {
				t.Errorf("phrase %q not read:\n%s", phrase, doc.Pages[0].Text)
			}
		})
	}
}

// makeMixedPDF has a page of text, then a page that is only an image.
func makeMixedPDF() []byte {
	w := &pdfWriter{}
	catalog := w.add("")
	tree := w.add("")
	font := w.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	text := w.stream("", []byte("BT /F1 12 Tf 72 700 Td (The first page has a real text layer.) Tj ET"))
	page1 := w.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", tree, font, text))
	img := w.stream("/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8", []byte{0, 255, 255, 0})
	draw := w.stream("", []byte("q 100 0 0 100 100 600 cm /Im1 Do Q"))
	page2 := w.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>", tree, img, draw))
	w.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	w.set(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R %d 0 R] /Count 2 >>", page1, page2))
	return w.bytes(catalog, "")
}

// whitePNG is a blank 100×100 PNG.
func whitePNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 100, 100))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestOCRWithoutTesseract hides Tesseract: scans and images fail with a
// message saying what to install, text PDFs are read as before, and a PDF
// with a scanned page among text pages is read without that page.
func TestOCRWithoutTesseract(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	install := "apt-get install tesseract-ocr tesseract-ocr-eng"
	for _, c := range []struct {
		name string
		data []byte
		opts Options
		want string
	}{
		{"scanned PDF", makeImagePDF(), Options{}, "the PDF has no text layer: its pages are probably scanned images, and OCR is not available: Tesseract is not installed"},
		{"PNG", whitePNG(t), Options{}, "the PNG image has no text layer: it can only be read with OCR, and OCR is not available"},
		{"binary path", makeImagePDF(), Options{OCR: OCR{Binary: "/nonexistent/tesseract", Languages: "eng+deu"}}, "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Detect(c.data)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ExtractWith(context.Background(), f, c.data, c.opts)
			if !errors.Is(err, ErrNoText) || !errors.Is(err, ErrOCRUnavailable) {
				t.Fatalf("got %v, want ErrNoText and ErrOCRUnavailable", err)
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || !strings.Contains(msg, install) {
				t.Errorf("message %q does not say %q and %q", msg, c.want, install)
			}
		})
	}
	t.Run("text PDF", func(t *testing.T) {
		doc, err := Extract(context.Background(), makePDF(numberedPages(3)))
		if err != nil || len(doc.Pages) != 3 || doc.OCRPages != 0 || len(doc.Unread) != 0 {
			t.Fatalf("Extract = %+v, %v", doc, err)
		}
	})
	t.Run("text and scanned pages", func(t *testing.T) {
		doc, err := Extract(context.Background(), makeMixedPDF())
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Pages) != 2 || !strings.Contains(doc.Pages[0].Text, "real text layer") || doc.Pages[1].Text != "" {
			t.Fatalf("got pages %+v", doc.Pages)
		}
		if len(doc.Unread) != 1 || doc.Unread[0].Number != 2 || !strings.Contains(doc.Unread[0].Reason, install) {
			t.Errorf("unread pages %+v, want page 2 with what to install", doc.Unread)
		}
	})
}

func TestParseOCRLanguages(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // nil: an error
	}{
		{"", []string{"eng"}},
		{"eng", []string{"eng"}},
		{"eng+deu", []string{"eng", "deu"}},
		{" eng + deu ", []string{"eng", "deu"}},
		{"eng+eng", []string{"eng"}},
		{"chi_sim+script/Latin", []string{"chi_sim", "script/Latin"}},
		{"eng+", nil},
		{"eng,deu", nil},
		{"../../etc/passwd", nil},
		{"-l", nil},
	} {
		got, err := ParseOCRLanguages(c.in)
		if c.want == nil {
			if err == nil {
				t.Errorf("ParseOCRLanguages(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseOCRLanguages(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	// What Tesseract lists but reads no text with, and a language's name
	// for its code, are refused saying what to give.
	for in, want := range map[string]string{
		"osd":        `"osd" is Tesseract's orientation and script detection data, not a language`,
		"eng+equ":    `"equ" is Tesseract's equation detection data, not a language`,
		"English":    `"English" is a language's name, not its Tesseract code: give eng`,
		"eng+german": `"german" is a language's name, not its Tesseract code: give deu`,
	} {
		if _, err := ParseOCRLanguages(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOCRLanguages(%q): %v, want it to say %s", in, err, want)
		}
	}
}

func TestDebianPackage(t *testing.T) {
	for lang, want := range map[string]string{
		"eng":          "tesseract-ocr-eng",
		"deu":          "tesseract-ocr-deu",
		"chi_sim":      "tesseract-ocr-chi-sim",
		"chi_tra_vert": "tesseract-ocr-chi-tra-vert",
		"script/Latin": "the tesseract-ocr-script-* package for Latin",
	} {
		if got := debianPackage(lang); got != want {
			t.Errorf("debianPackage(%q) = %q, want %q", lang, got, want)
		}
	}
}

// TestCheckOCRWithRealTesseract checks the start-up check against the
// installed Tesseract: English is there (.ci/run installs it), and a
// language code no pack has is refused with the package to install.
func TestCheckOCRWithRealTesseract(t *testing.T) {
	requireTesseract(t)
	installed, err := CheckOCR(context.Background(), OCR{})
	if err != nil || !slices.Contains(installed, "eng") {
		t.Fatalf("CheckOCR(eng) = %v, %v", installed, err)
	}
	_, err = CheckOCR(context.Background(), OCR{Languages: "eng+qqq"})
	if err == nil || !strings.Contains(err.Error(), `"qqq" is not installed: install the Debian package tesseract-ocr-qqq`) {
		t.Errorf("CheckOCR(eng+qqq) = %v", err)
	}
}
