package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

func TestDocumentTitle(t *testing.T) {
	tests := []struct{ name, first, want string }{
		{"PDF first page", "Libtasn1\n\nAbstract Syntax Notation One (ASN.1) library", "Libtasn1"},
		{"page number before", "  12 \n\nShared MIME-info Database\n\nThis document…", "Shared MIME-info Database"},
		{"Markdown", "# Backup strategy\n\nCopies go to two disks.", "Backup strategy"},
		{"opens with a paragraph", "Notes from the meeting.\n\nWe talked about it.", ""},
		{"opens with a long line", "This line is far too long to be the title of anything at all, it is a sentence\nmore", ""},
		{"one line is all text", "Preparation time: ten minutes", ""},
		{"one short line is all text", "Fahrenheit scale", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := documentTitle(tt.first); got != tt.want {
			t.Errorf("%s: documentTitle(%q) = %q, want %q", tt.name, tt.first, got, tt.want)
		}
	}
}

func TestChunkTitle(t *testing.T) {
	tests := []struct{ name, doc, text, want string }{
		{"section heading", "Shared MIME-info Database",
			"Do not rely on two applications.\n\n2.17. User modification\n\nThe MIME database is NOT intended to store user preferences.",
			"Shared MIME-info Database\n2.17. User modification"},
		{"document title not repeated", "Libtasn1", "Libtasn1\n\nAbstract Syntax Notation One library.", "Libtasn1"},
		{"lines inside a paragraph are not headings", "", "BEGIN\nEND\n\nThe end.", ""},
		{"one paragraph", "T", "Short words", "T"},
		{"no title", "", "First paragraph.\n\nSecond heading\n\nMore text.", "Second heading"},
	}
	for _, tt := range tests {
		if got := chunkTitle(tt.doc, store.Chunk{Text: tt.text}); got != tt.want {
			t.Errorf("%s: chunkTitle = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestNotHeadings: short lines that read as headings by length and
// punctuation alone but are list items, code, addresses or labels are kept
// out of a chunk's head, and real headings beside them stay.
func TestNotHeadings(t *testing.T) {
	tests := []struct {
		line    string
		heading bool
	}{
		{"2.17. User modification", true},
		{"Chapter 2: ASN.1 structure handling", true},
		{"read-only mounts", true},
		{"Input/output redirection", true},
		{"• <MIME>/magic (contains a mapping from file contents to MIME types)", false},
		{"- first item of a list", false},
		{"* another item", false},
		{"LEN = strlen(VALUE)+1", false},
		{"[50:text/x-diff]\\n", false},
		{"Group ::= SEQUENCE { id OBJECT IDENTIFIER }", false},
		{"KDEThe KDE desktop, http://www.kde.org", false},
		{"X Desktop Group (http://www.freedesktop.org)", false},
		{"Nikos Mavrogiannopoulos (help-libtasn1@gnu.org)", false},
		{"der len: the bytes of the encoded string", false},
		{"AliasList: 4 CARD32 N_ALIASES 8*N_ALIASES AliasListEntry", false},
	}
	for _, tt := range tests {
		if got := headingLike(tt.line); got != tt.heading {
			t.Errorf("headingLike(%q) = %v, want %v", tt.line, got, tt.heading)
		}
	}
	text := "• <MIME>/icons (contains a mapping from MIME types to icons)\n\n2.1. Directory layout\n\nThe database is stored in files."
	if got, want := chunkTitle("", store.Chunk{Text: text}), "2.1. Directory layout"; got != want {
		t.Errorf("chunkTitle = %q, want %q", got, want)
	}
}

// TestChunkTitleSections: the sections a chunk's page sits in (from the
// document's outline) are part of its title, before its own headings,
// and a heading the outline also names is there once.
func TestChunkTitleSections(t *testing.T) {
	c := store.Chunk{
		Text:     "Returns the value of one element inside a structure.\n\nasn1 read value type\n\nReturns the type and value.",
		Sections: []string{"ASN.1 field functions", "ASN1 read value-type"},
	}
	if got, want := chunkTitle("Libtasn1", c), "Libtasn1\nASN.1 field functions\nASN1 read value-type"; got != want {
		t.Errorf("chunkTitle = %q, want %q", got, want)
	}
}

// TestOutlineSectionsSearched uploads a real manual and asks for a section
// by the outline's name for it, "field functions": pages of that section
// whose text never says "field" are found through their head, both as
// indexed at upload and as rebuilt from the store (the sections are kept
// with the chunks, not only in the snapshot).
func TestOutlineSectionsSearched(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "data", "pdf", "libtasn1.pdf"))
	if err != nil {
		t.Skipf("shared PDF not available (%v); skipping", err)
	}
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	foundByOutline := func(e *Engine) {
		t.Helper()
		res, _, err := searcher(e).Search(context.Background(), "cus_a", "field functions", 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			// "ASN.1 field functions" runs from page 11 to page 17.
			if r.Chunk.Page >= 11 && r.Chunk.Page <= 17 && !strings.Contains(strings.ToLower(r.Chunk.Text), "field") {
				return
			}
		}
		for _, r := range res {
			t.Logf("page %d: %.80q", r.Chunk.Page, r.Chunk.Text)
		}
		t.Errorf("no page of the section found by its outline title")
	}

	e := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	job, _, err := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: "libtasn1.pdf", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, e, job.ID); j.Status != store.StatusSucceeded {
		t.Fatalf("job %+v", j)
	}
	foundByOutline(e)
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Without its snapshot, the index is rebuilt from the store.
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	e = New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	foundByOutline(e)
}
