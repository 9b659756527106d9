package pdf

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"image"
	"image/png"
	"strings"
)

// scanRequest is what ScanPages asks of a worker.
type scanRequest struct {
	Pages  []int  `json:"pages"` // 0-based
	DPI    int    `json:"dpi"`
	Format Format `json:"format"`
}

// ScanPages renders pages (1-based) of a document at dpi to grey images, as
// a scanner would, and returns them as an image-only PDF (f is FormatPDF)
// or, for one page, as a PNG (f is FormatPNG). MuPDF runs in a worker
// process, as for Extract. `docsift bench ocr` and the tests make the
// scans they read back with it.
func ScanPages(ctx context.Context, data []byte, pages []int, dpi int, f Format) ([]byte, error) {
	if f != FormatPDF && !(f == FormatPNG && len(pages) == 1) {
		return nil, fmt.Errorf("pdf: scan: %s of %d pages is not a format ScanPages writes", f, len(pages))
	}
	req := scanRequest{DPI: dpi, Format: f}
	for _, p := range pages {
		req.Pages = append(req.Pages, p-1)
	}
	res, err := runWorkerJob(ctx, workerJob{mode: workerModeScan, opts: workerOptions{Scan: &req}}, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return res.Scan, nil
}

// renderScan is the worker's side of ScanPages.
func renderScan(data []byte, req scanRequest) ([]byte, error) {
	imgs, err := renderGrey(data, req.Pages, float64(req.DPI))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrCorrupt)
	}
	if req.Format == FormatPNG {
		var b bytes.Buffer
		if err := png.Encode(&b, imgs[0]); err != nil {
			return nil, fmt.Errorf("pdf: scan: %v: %w", err, ErrCorrupt)
		}
		return b.Bytes(), nil
	}
	return writeScanPDF(imgs, float64(req.DPI)), nil
}

// renderGrey renders pages (0-based) of a document with MuPDF at dpi, as
// grey images, in this process (the worker's, for ScanPages).
func renderGrey(data []byte, pages []int, dpi float64) (imgs []*image.Gray, err error) {
	defer func() {
		if r := recover(); r != nil {
			imgs, err = nil, fmt.Errorf("pdf: render failed: %v", r)
		}
	}()
	doc, err := openFitz(data)
	if err != nil {
		return nil, err
	}
	defer doc.Close()
	for _, p := range pages {
		rgba, err := doc.ImageDPI(p, dpi)
		if err != nil {
			return nil, fmt.Errorf("pdf: render page %d: %w", p+1, err)
		}
		b := rgba.Bounds()
		grey := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
		pgm := encodePGM(rgba)
		copy(grey.Pix, pgm[len(pgm)-len(grey.Pix):])
		imgs = append(imgs, grey)
	}
	return imgs, nil
}

// writeScanPDF returns an image-only PDF, as a scanner writes one: page i
// is imgs[i] filling a page of its size at dpi, with no text layer. The
// pixels are Flate-compressed, losslessly.
func writeScanPDF(imgs []*image.Gray, dpi float64) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string, stream []byte) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s", len(offsets), body)
		if stream != nil {
			b.WriteString("\nstream\n")
			b.Write(stream)
			b.WriteString("\nendstream")
		}
		b.WriteString("\nendobj\n")
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	// Objects: 1 catalog, 2 page tree, then per page: page, content, image.
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	kids := make([]string, len(imgs))
	for i := range imgs {
		kids[i] = fmt.Sprintf("%d 0 R", 3+3*i)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(imgs)), nil)
	for i, img := range imgs {
		w, h := img.Bounds().Dx(), img.Bounds().Dy()
		pw, ph := float64(w)*72/dpi, float64(h)*72/dpi
		page := 3 + 3*i
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.2f %.2f] /Resources << /XObject << /Im0 %d 0 R >> >> /Contents %d 0 R >>", pw, ph, page+2, page+1), nil)
		content := fmt.Appendf(nil, "q %.2f 0 0 %.2f 0 0 cm /Im0 Do Q", pw, ph)
		obj(fmt.Sprintf("<< /Length %d >>", len(content)), content)
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		for y := range h {
			zw.Write(img.Pix[y*img.Stride : y*img.Stride+w])
		}
		zw.Close()
		obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>", w, h, z.Len()), z.Bytes())
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// RawPage is one page's text as the worker read it, before cleaning (see
// clean.go), and when OCR read none, why (Problem, Detail).
type RawPage struct {
	Text            string
	Problem, Detail string
}

// ReadRaw reads a PDF's text page by page in the worker process, through
// OCR when ocr is set (its zero fields taking their defaults), and
// returns it uncleaned: `docsift bench ocr` (bench/ocrbench) compares a
// page's text layer with what OCR reads of its scan, as the worker reads
// both for an upload.
func ReadRaw(ctx context.Context, data []byte, ocr *OCR) ([]RawPage, error) {
	opts := workerOptions{Format: FormatPDF}
	if ocr != nil {
		o := ocr.withDefaults()
		opts.OCR = &o
	}
	res, err := runWorkerJob(ctx, workerJob{mode: workerModeExtract, opts: opts}, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	pages := make([]RawPage, len(res.Pages))
	for i, p := range res.Pages {
		pages[i] = RawPage{Text: p.Text, Problem: p.Problem, Detail: p.Detail}
	}
	return pages, nil
}
