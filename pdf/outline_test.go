package pdf

import (
	"context"
	"reflect"
	"slices"
	"testing"
)

func TestPageSections(t *testing.T) {
	outline := []outlineEntry{
		{Level: 1, Title: "1 Introduction", Page: 0},
		{Level: 1, Title: "2 Usage", Page: 1},
		{Level: 2, Title: "2.1 Options", Page: 1},
		{Level: 2, Title: "2.2 Files", Page: 3},
		{Level: 2, Title: "0 Stray", Page: 0}, // out of page order
	}
	got := pageSections("Manual", outline, 5)
	want := [][]string{
		{"Manual", "1 Introduction", "0 Stray"},
		{"Manual", "0 Stray", "2 Usage", "2.1 Options"}, // continues page 1's last, starts two
		{"Manual", "2.1 Options"},
		{"Manual", "2.1 Options", "2.2 Files"},
		{"Manual", "2.2 Files"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pageSections =\n%q\nwant\n%q", got, want)
	}
	if got := pageSections("", nil, 2); !reflect.DeepEqual(got, [][]string{nil, nil}) {
		t.Errorf("no title, no outline: %q, want no sections", got)
	}
}

func TestCleanTitle(t *testing.T) {
	for in, want := range map[string]string{
		"gnuplot documentation\x00\x00\x00   ": "gnuplot documentation",
		"  2.17.\tUser\nmodification ":         "2.17. User modification",
		"\x00\x00":                             "",
	} {
		if got := cleanTitle(in); got != want {
			t.Errorf("cleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRealPDFSections: extraction gives each page of a real manual the
// outline's sections it sits in, through the worker process, and the
// metadata title of a PDF that has one.
func TestRealPDFSections(t *testing.T) {
	doc, err := Extract(context.Background(), realPDF(t, "libtasn1.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	// asn1_read_value is documented on pages 16 and 17, inside "ASN.1
	// field functions", which starts on page 11.
	for _, p := range []int{16, 17} {
		if s := doc.Pages[p-1].Sections; !slices.Contains(s, "ASN.1 field functions") {
			t.Errorf("page %d sections %q, want ASN.1 field functions", p, s)
		}
	}
	doc, err = Extract(context.Background(), realPDF(t, "gnuplot.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if s := doc.Pages[100].Sections; len(s) == 0 || s[0] != "gnuplot documentation" {
		t.Errorf("gnuplot page 101 sections %q, want the metadata title first", s)
	}
}
