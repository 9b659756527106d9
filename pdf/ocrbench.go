package pdf

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The OCR benchmark measures how well and how fast scans are read, on PDFs
// that have a text layer to compare with: pages are rendered to grey images
// at a scanner's resolution (MuPDF, as a clean scan), put into an
// image-only PDF, and extracted through the worker exactly as an upload
// is; the OCR text of each page is compared with the page's text layer.
//
//	docsift bench ocr ../shared/data/pdf
//
// The figures are an upper bound for real scans, which add noise, skew and
// paper texture.

// Defaults of OCRBenchConfig.
const (
	DefaultOCRBenchPages = 5
	// ocrBenchMinLetters skips pages too short to measure (blank pages,
	// chapter titles), whose accuracy would swing on a few characters.
	ocrBenchMinLetters = 400
)

// DefaultOCRBenchDPIs are the scan resolutions measured by default: the
// two that scanners offer for documents.
var DefaultOCRBenchDPIs = []int{200, 300}

// OCRBenchConfig says what to measure.
type OCRBenchConfig struct {
	// Files are PDFs with a text layer, or folders of them.
	Files []string
	// Pages is how many pages of each file are scanned, spread evenly over
	// the pages with enough text; default DefaultOCRBenchPages.
	Pages int
	// DPIs are the scan resolutions; default DefaultOCRBenchDPIs.
	DPIs []int
	// OCR is how the scans are read, as the server would read them.
	OCR OCR
}

// OCRBenchResult is one run per scan resolution.
type OCRBenchResult struct {
	Files []string      `json:"files"`
	Runs  []OCRBenchRun `json:"runs"`
}

// OCRBenchRun is the outcome at one scan resolution.
type OCRBenchRun struct {
	DPI        int `json:"dpi"`
	Pages      int `json:"pages"`
	Characters int `json:"characters"` // in the text layers compared with
	// Accuracy is 1 − (Levenshtein distance / characters), summed over the
	// pages, after normalising whitespace and typographic variants (see
	// normaliseForAccuracy).
	Accuracy      float64 `json:"accuracy"`
	WorstPage     string  `json:"worst_page"` // file and page number
	WorstAccuracy float64 `json:"worst_accuracy"`
	// Seconds is the time of extraction through the worker (rendering
	// at OCR's resolution and Tesseract), one document at a time.
	Seconds        float64 `json:"seconds"`
	PagesPerSecond float64 `json:"pages_per_second"`
}

// benchPage is a page chosen for the benchmark, with its text layer.
type benchPage struct {
	file  string
	index int // 0-based
	text  string
}

// RunOCRBench runs the OCR benchmark, telling log what it does.
func RunOCRBench(ctx context.Context, cfg OCRBenchConfig, log io.Writer) (*OCRBenchResult, error) {
	if cfg.Pages <= 0 {
		cfg.Pages = DefaultOCRBenchPages
	}
	if len(cfg.DPIs) == 0 {
		cfg.DPIs = DefaultOCRBenchDPIs
	}
	ocr := cfg.OCR.withDefaults()
	if _, err := CheckOCR(ctx, ocr); err != nil {
		return nil, err
	}
	files, err := benchFiles(cfg.Files)
	if err != nil {
		return nil, err
	}
	res := &OCRBenchResult{Files: files}
	docs := map[string][]byte{}
	var pages []benchPage
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("bench ocr: %w", err)
		}
		chosen, err := chooseBenchPages(ctx, f, data, cfg.Pages)
		if err != nil {
			return nil, err
		}
		docs[f] = data
		pages = append(pages, chosen...)
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("bench ocr: no page of %s has %d letters of text to compare OCR with", strings.Join(files, ", "), ocrBenchMinLetters)
	}
	for _, dpi := range cfg.DPIs {
		run := OCRBenchRun{DPI: dpi, WorstAccuracy: 1}
		dist := 0
		for _, f := range files {
			var mine []benchPage
			for _, p := range pages {
				if p.file == f {
					mine = append(mine, p)
				}
			}
			if len(mine) == 0 {
				continue
			}
			fmt.Fprintf(log, "scanning %d pages of %s at %d dpi and reading them back\n", len(mine), filepath.Base(f), dpi)
			numbers := make([]int, len(mine))
			for i, p := range mine {
				numbers[i] = p.index + 1
			}
			scan, err := ScanPages(ctx, docs[f], numbers, dpi, FormatPDF)
			if err != nil {
				return nil, fmt.Errorf("bench ocr: scan %s: %w", f, err)
			}
			start := time.Now()
			out, err := runWorkerJob(ctx, workerJob{mode: workerModeExtract, opts: workerOptions{Format: FormatPDF, OCR: &ocr}}, bytes.NewReader(scan))
			run.Seconds += time.Since(start).Seconds()
			if err != nil {
				return nil, fmt.Errorf("bench ocr: read the scan of %s: %w", f, err)
			}
			for i, p := range mine {
				if i >= len(out.Pages) {
					break
				}
				if got := out.Pages[i]; got.Problem != "" {
					fmt.Fprintf(log, "  page %d: %s\n", p.index+1, got.Detail)
				}
				d, n := editDistance(normaliseForAccuracy(p.text), normaliseForAccuracy(out.Pages[i].Text))
				dist += d
				run.Characters += n
				run.Pages++
				if acc := accuracy(d, n); acc < run.WorstAccuracy {
					run.WorstAccuracy, run.WorstPage = acc, fmt.Sprintf("%s page %d", filepath.Base(f), p.index+1)
				}
			}
		}
		run.Accuracy = accuracy(dist, run.Characters)
		if run.Seconds > 0 {
			run.PagesPerSecond = float64(run.Pages) / run.Seconds
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// benchFiles expands folders to the PDFs in them, sorted.
func benchFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("bench ocr: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, a)
			continue
		}
		found, err := filepath.Glob(filepath.Join(a, "*.pdf"))
		if err != nil {
			return nil, fmt.Errorf("bench ocr: %w", err)
		}
		files = append(files, found...)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("bench ocr: give PDFs with a text layer, or folders of them")
	}
	sort.Strings(files)
	return files, nil
}

// chooseBenchPages picks n pages of a PDF spread evenly over those whose
// text layer has at least ocrBenchMinLetters letters.
func chooseBenchPages(ctx context.Context, file string, data []byte, n int) ([]benchPage, error) {
	res, err := runWorkerJob(ctx, workerJob{mode: workerModeExtract, opts: workerOptions{Format: FormatPDF}}, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("bench ocr: read %s: %w", file, err)
	}
	var candidates []benchPage
	for i, p := range res.Pages {
		if countLetters(p.Text) >= ocrBenchMinLetters {
			candidates = append(candidates, benchPage{file: file, index: i, text: p.Text})
		}
	}
	if len(candidates) <= n {
		return candidates, nil
	}
	chosen := make([]benchPage, n)
	for k := range n {
		chosen[k] = candidates[(2*k+1)*len(candidates)/(2*n)]
	}
	return chosen, nil
}

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

// accuracyFolds maps typographic variants a text layer holds and OCR
// writes plainly (or the other way round) to one form: they are the same
// text to a reader and a search, so they are not counted as errors.
var accuracyFolds = strings.NewReplacer(
	"ﬁ", "fi", "ﬂ", "fl", "ﬀ", "ff", "ﬃ", "ffi", "ﬄ", "ffl",
	"‘", "'", "’", "'", "‚", "'", "“", `"`, "”", `"`, "„", `"`, "´", "'", "`", "'",
	"–", "-", "—", "-", "‐", "-", "‑", "-", "−", "-",
	"…", "...", "•", "*", "·", "*", "\u00a0", " ",
)

// normaliseForAccuracy folds typographic variants and collapses all
// whitespace to single spaces: OCR lays out lines and blank lines its own
// way, and the words are what is searched.
func normaliseForAccuracy(s string) []rune {
	return []rune(strings.Join(strings.Fields(accuracyFolds.Replace(s)), " "))
}

// editDistance returns the Levenshtein distance between ref and hyp, and
// the length of ref.
func editDistance(ref, hyp []rune) (dist, n int) {
	prev := make([]int, len(hyp)+1)
	cur := make([]int, len(hyp)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		cur[0] = i
		for j := 1; j <= len(hyp); j++ {
			sub := prev[j-1]
			if ref[i-1] != hyp[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(hyp)], len(ref)
}

// accuracy is 1 − dist/n, at least 0.
func accuracy(dist, n int) float64 {
	if n == 0 {
		return 1
	}
	return max(0, 1-float64(dist)/float64(n))
}
