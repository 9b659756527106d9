package pdf

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"testing"
)

// The extraction benchmarks run on gnuplot.pdf (311 pages) and compare
// with poppler's pdftotext on the same file in the same run:
//
//	go test -run '^$' -bench Gnuplot -benchtime 10x ./pdf/
//
// Divide the two pages/s figures for the ratio.

const benchPDF = "gnuplot.pdf"

// BenchmarkExtractGnuplot measures the whole Extract path: detection,
// MuPDF text extraction and cleaning.
func BenchmarkExtractGnuplot(b *testing.B) {
	data := realPDF(b, benchPDF)
	pages := 0
	for b.Loop() {
		doc, err := Extract(context.Background(), data)
		if err != nil {
			b.Fatal(err)
		}
		pages += len(doc.Pages)
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}

// BenchmarkMuPDFGnuplot measures MuPDF text extraction alone, without
// cleaning, to show what cleaning costs.
func BenchmarkMuPDFGnuplot(b *testing.B) {
	data := realPDF(b, benchPDF)
	pages := 0
	for b.Loop() {
		raw, err := readPages(context.Background(), data)
		if err != nil {
			b.Fatal(err)
		}
		pages += len(raw)
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}

// BenchmarkPdftotextGnuplot runs poppler's pdftotext on the same file,
// writing the text to a pipe that is drained, as a reference point.
func BenchmarkPdftotextGnuplot(b *testing.B) {
	realPDF(b, benchPDF)
	bin, err := exec.LookPath("pdftotext")
	if err != nil {
		b.Skip("pdftotext not installed (Debian: apt-get install poppler-utils)")
	}
	path := filepath.Join(realPDFDir, benchPDF)
	n, err := PageCount(realPDF(b, benchPDF))
	if err != nil {
		b.Fatal(err)
	}
	pages := 0
	for b.Loop() {
		cmd := exec.Command(bin, "-enc", "UTF-8", path, "-")
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		pages += n
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}
