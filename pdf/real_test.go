package pdf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realPDFDir holds the Debian documentation PDFs shared by the project's
// tests and benchmarks. The repository does not copy them; tests skip when
// they are absent. From this package the repo's sibling "shared" directory
// is two levels up.
var realPDFDir = filepath.Join("..", "..", "shared", "data", "pdf")

func readRealPDF(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(realPDFDir, name))
}

func realPDF(t testing.TB, name string) []byte {
	t.Helper()
	data, err := readRealPDF(name)
	if err != nil {
		t.Skipf("real PDF %s not available (%v); skipping", name, err)
	}
	return data
}

// realPDFs lists each shared PDF with its page count and a phrase found on
// exactly one known page (checked against pdftotext's page numbering).
var realPDFs = []struct {
	name   string
	pages  int
	phrase string
	page   int
}{
	{"bashref.pdf", 196, "not treated specially and do not", 70},
	{"gnuplot.pdf", 311, "effect of executing the basic command", 100},
	{"libtasn1.pdf", 36, "array is a vector created by", 12},
	{"shared-mime-info-spec.pdf", 17, "that the type is also sometimes", 5},
}

func TestExtractRealPDFs(t *testing.T) {
	for _, c := range realPDFs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := realPDF(t, c.name)
			doc, err := Extract(context.Background(), data)
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Pages) != c.pages {
				t.Fatalf("got %d pages, want %d", len(doc.Pages), c.pages)
			}
			if n, err := PageCount(data); n != c.pages || err != nil {
				t.Errorf("PageCount = %d, %v", n, err)
			}
			for _, p := range doc.Pages {
				if has := strings.Contains(p.Text, c.phrase); has != (p.Number == c.page) {
					t.Errorf("phrase %q on page %d: %v", c.phrase, p.Number, has)
				}
			}
		})
	}
}

func TestRealPDFHeadersRemoved(t *testing.T) {
	doc, err := Extract(context.Background(), realPDF(t, "bashref.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	// Pages of chapter 3 carry "Chapter 3: Basic Shell Features" and the
	// page number as a running header.
	for _, p := range doc.Pages[40:50] {
		if strings.Contains(p.Text, "Chapter 3: Basic Shell Features") {
			t.Errorf("page %d keeps its running header: %.80q", p.Number, p.Text)
		}
	}
	gnu, err := Extract(context.Background(), realPDF(t, "gnuplot.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	// The table of contents has dot leaders and "gnuplot 5.4" headers.
	toc := gnu.Pages[9].Text
	if strings.Contains(toc, ". . . .") || strings.Contains(toc, "gnuplot 5.4") {
		t.Errorf("table of contents not cleaned: %.200q", toc)
	}
}
