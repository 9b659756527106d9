// Package ocrbench is `docsift bench ocr`: how well and how fast scans are
// read, on PDFs that have a text layer to compare with.
package ocrbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/docsift/docsift/pdf"
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

// Defaults of Config.
const (
	DefaultPages = 5
	// minLetters skips pages too short to measure (blank pages,
	// chapter titles), whose accuracy would swing on a few characters.
	minLetters = 400
)

// DefaultDPIs are the scan resolutions measured by default: the
// two that scanners offer for documents.
var DefaultDPIs = []int{200, 300}

// Config says what to measure.
type Config struct {
	// Files are PDFs with a text layer, or folders of them.
	Files []string
	// Pages is how many pages of each file are scanned, spread evenly over
	// the pages with enough text; default DefaultPages.
	Pages int
	// DPIs are the scan resolutions; default DefaultDPIs.
	DPIs []int
	// OCR is how the scans are read, as the server would read them.
	OCR pdf.OCR
}

// Result is one run per scan resolution.
type Result struct {
	Files []string `json:"files"`
	Runs  []Run    `json:"runs"`
}

// Run is the outcome at one scan resolution.
type Run struct {
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

// page is a page chosen for the benchmark, with its text layer.
type page struct {
	file  string
	index int // 0-based
	text  string
}

// Measure runs the OCR benchmark, telling log what it does.
func Measure(ctx context.Context, cfg Config, log io.Writer) (*Result, error) {
	if cfg.Pages <= 0 {
		cfg.Pages = DefaultPages
	}
	if len(cfg.DPIs) == 0 {
		cfg.DPIs = DefaultDPIs
	}
	if _, err := pdf.CheckOCR(ctx, cfg.OCR); err != nil {
		return nil, err
	}
	files, err := pdfFiles(cfg.Files)
	if err != nil {
		return nil, err
	}
	res := &Result{Files: files}
	docs := map[string][]byte{}
	var pages []page
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("bench ocr: %w", err)
		}
		chosen, err := choosePages(ctx, f, data, cfg.Pages)
		if err != nil {
			return nil, err
		}
		docs[f] = data
		pages = append(pages, chosen...)
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("bench ocr: no page of %s has %d letters of text to compare OCR with", strings.Join(files, ", "), minLetters)
	}
	for _, dpi := range cfg.DPIs {
		run := Run{DPI: dpi, WorstAccuracy: 1}
		dist := 0
		for _, f := range files {
			var mine []page
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
			scan, err := pdf.ScanPages(ctx, docs[f], numbers, dpi, pdf.FormatPDF)
			if err != nil {
				return nil, fmt.Errorf("bench ocr: scan %s: %w", f, err)
			}
			start := time.Now()
			read, err := pdf.ReadRaw(ctx, scan, &cfg.OCR)
			run.Seconds += time.Since(start).Seconds()
			if err != nil {
				return nil, fmt.Errorf("bench ocr: read the scan of %s: %w", f, err)
			}
			for i, p := range mine {
				if i >= len(read) {
					break
				}
				if got := read[i]; got.Problem != "" {
					fmt.Fprintf(log, "  page %d: %s\n", p.index+1, got.Detail)
				}
				d, n := editDistance(normaliseForAccuracy(p.text), normaliseForAccuracy(read[i].Text))
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

// pdfFiles expands folders to the PDFs in them, sorted.
func pdfFiles(args []string) ([]string, error) {
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

// choosePages picks n pages of a PDF spread evenly over those whose
// text layer has at least minLetters letters.
func choosePages(ctx context.Context, file string, data []byte, n int) ([]page, error) {
	layer, err := pdf.ReadRaw(ctx, data, nil)
	if err != nil {
		return nil, fmt.Errorf("bench ocr: read %s: %w", file, err)
	}
	var candidates []page
	for i, p := range layer {
		if countLetters(p.Text) >= minLetters {
			candidates = append(candidates, page{file: file, index: i, text: p.Text})
		}
	}
	if len(candidates) <= n {
		return candidates, nil
	}
	chosen := make([]page, n)
	for k := range n {
		chosen[k] = candidates[(2*k+1)*len(candidates)/(2*n)]
	}
	return chosen, nil
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

// countLetters counts the letters of s.
func countLetters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}
