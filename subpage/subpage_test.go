package subpage

import (
	"mime"
	"testing"
)

func TestFileName(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"numbered.pdf", "numbered-pages-1-2.pdf"},
		{"UPPER.PDF", "UPPER-pages-1-2.pdf"},
		{"Отчёт 2024.pdf", "Отчёт_2024-pages-1-2.pdf"},
		{"報告書.pdf", "報告書-pages-1-2.pdf"},
		{"a/b\\c\"d;e.pdf", "a_b_c_d_e-pages-1-2.pdf"},
		{"???.pdf", "document-pages-1-2.pdf"},
	} {
		if got := FileName(c.doc, 1, 2); got != c.want {
			t.Errorf("FileName(%q) = %q, want %q", c.doc, got, c.want)
		}
	}
	// The header carries a name in any script, as RFC 2231 encodes it.
	_, params, err := mime.ParseMediaType(mime.FormatMediaType("inline", map[string]string{"filename": FileName("Отчёт.pdf", 1, 2)}))
	if err != nil || params["filename"] != "Отчёт-pages-1-2.pdf" {
		t.Errorf("Content-Disposition filename = %q, %v", params["filename"], err)
	}
}
