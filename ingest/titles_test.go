package ingest

import "testing"

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
		if got := chunkTitle(tt.doc, tt.text); got != tt.want {
			t.Errorf("%s: chunkTitle = %q, want %q", tt.name, got, tt.want)
		}
	}
}
