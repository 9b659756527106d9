package pdf

import (
	"context"
	"errors"
	"testing"
)

// rawPages returns MuPDF's uncleaned page text, to compare a slice with its
// source page for page.
func rawPages(t testing.TB, data []byte) []string {
	t.Helper()
	pages, err := readPages(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// checkSlice slices first..last and checks the result page by page against
// the source pages wantFirst..wantLast.
func checkSlice(t *testing.T, src []byte, srcPages []string, first, last, wantFirst, wantLast int) {
	t.Helper()
	out, err := Slice(src, first, last)
	if err != nil {
		t.Fatalf("Slice(%d, %d): %v", first, last, err)
	}
	if f, err := Detect(out); f != FormatPDF || err != nil {
		t.Fatalf("slice is not a PDF: %q, %v", f, err)
	}
	got := rawPages(t, out)
	if len(got) != wantLast-wantFirst+1 {
		t.Fatalf("Slice(%d, %d) has %d pages, want %d", first, last, len(got), wantLast-wantFirst+1)
	}
	if n, err := PageCount(out); n != len(got) || err != nil {
		t.Errorf("PageCount of slice = %d, %v", n, err)
	}
	for i, text := range got {
		if want := srcPages[wantFirst-1+i]; text != want {
			t.Errorf("slice page %d: got %.100q, want source page %d %.100q", i+1, text, wantFirst+i, want)
		}
	}
}

func TestSliceGenerated(t *testing.T) {
	src := makePDF(numberedPages(10))
	pages := rawPages(t, src)
	checkSlice(t, src, pages, 4, 6, 4, 6)
	checkSlice(t, src, pages, 1, 1, 1, 1)
	checkSlice(t, src, pages, -1, 2, 1, 2)  // clamped at the start
	checkSlice(t, src, pages, 9, 20, 9, 10) // clamped at the end
	checkSlice(t, src, pages, 1, 10, 1, 10)
}

func TestSliceErrors(t *testing.T) {
	src := makePDF(numberedPages(3))
	cases := []struct {
		name        string
		data        []byte
		first, last int
		want        error
	}{
		{"beyond the end", src, 4, 5, ErrPageRange},
		{"reversed", src, 3, 2, ErrPageRange},
		{"not a pdf", []byte("plain text"), 1, 1, ErrUnsupported},
		{"epub", makeEPUB(t, "x"), 1, 1, ErrUnsupported},
		{"empty", nil, 1, 1, ErrEmpty},
		{"truncated", src[:len(src)/2], 1, 1, ErrCorrupt},
		{"encrypted", encryptPDF(t, src, "pw"), 1, 1, ErrEncrypted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Slice(c.data, c.first, c.last)
			if !errors.Is(err, c.want) || out != nil {
				t.Fatalf("Slice = %d bytes, %v; want %v", len(out), err, c.want)
			}
		})
	}
}

func TestSliceRealPDFs(t *testing.T) {
	for _, c := range realPDFs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := realPDF(t, c.name)
			pages := rawPages(t, src)
			// varience 1 around the phrase's page, and clamped at both ends.
			checkSlice(t, src, pages, c.page-1, c.page+1, c.page-1, c.page+1)
			checkSlice(t, src, pages, 0, 2, 1, 2)
			checkSlice(t, src, pages, c.pages-1, c.pages+1, c.pages-1, c.pages)
		})
	}
}
