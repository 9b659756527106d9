package ingest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docsift/docsift/pdf"
)

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"One. Two! Three?", []string{"One.", "Two!", "Three?"}},
		{"Pi is 3.14 today. See e.g. the docs. Next", []string{"Pi is 3.14 today.", "See e.g. the docs.", "Next"}},
		{"Dr. Smith met J. Doe. They talked.", []string{"Dr. Smith met J. Doe.", "They talked."}},
		{`He said "stop." Then left.`, []string{`He said "stop."`, "Then left."}},
		{"Heading\n\nBody text here", []string{"Heading", "Body text here"}},
		{"line one\nline two", []string{"line one\nline two"}},
		{"  ", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, s := range sentences(tt.in) {
			got = append(got, tt.in[s.start:s.end])
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("sentences(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func words(n int, tag string) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("%s%d", tag, i)
	}
	return strings.Join(ws, " ")
}

func TestChunkPagesBoundsOverlapAndPages(t *testing.T) {
	// 60 sentences of 10 words: 600 words on page 1, and a short page 2.
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "S%d %s. ", i, words(9, "w"))
	}
	pages := []pdf.Page{{Number: 1, Text: b.String()}, {Number: 2, Text: "Short page. Only this."}}
	chunks := ChunkPages(pages)
	if len(chunks) < 3 {
		t.Fatalf("got %d chunks, want at least 3", len(chunks))
	}
	for i, c := range chunks {
		if c.Position != i {
			t.Errorf("chunk %d has position %d", i, c.Position)
		}
		n := len(strings.Fields(c.Text))
		if n > chunkMaxWords {
			t.Errorf("chunk %d has %d words, over %d", i, n, chunkMaxWords)
		}
		src := pages[c.Page-1].Text
		if got := string([]rune(src)[c.Start:c.End]); strings.TrimSpace(got) != c.Text {
			t.Errorf("chunk %d offsets [%d,%d) do not select its text", i, c.Start, c.End)
		}
	}
	last := chunks[len(chunks)-1]
	if last.Page != 2 || last.Text != "Short page. Only this." {
		t.Errorf("last chunk = %+v, want all of page 2 alone", last)
	}
	// Consecutive chunks of page 1 share their boundary sentence.
	first, second := chunks[0], chunks[1]
	if second.Page != 1 || second.Start >= first.End {
		t.Errorf("no overlap: first ends at %d, second starts at %d", first.End, second.Start)
	}
	// Every sentence of page 1 is in some chunk.
	for i := range 60 {
		s := fmt.Sprintf("S%d ", i)
		found := false
		for _, c := range chunks {
			found = found || strings.Contains(c.Text+" ", s)
		}
		if !found {
			t.Errorf("sentence %q lost", s)
		}
	}
}

func TestChunkPagesSplitsOverlongSentence(t *testing.T) {
	text := words(1000, "x") // no full stop at all
	chunks := ChunkPages([]pdf.Page{{Text: text}})
	total := 0
	for _, c := range chunks {
		n := len(strings.Fields(c.Text))
		if n > chunkMaxWords {
			t.Fatalf("chunk of %d words", n)
		}
		total += n
	}
	if total < 1000 {
		t.Fatalf("lost words: %d of 1000", total)
	}
	if chunks[0].Page != 0 {
		t.Fatalf("unpaged text got page %d", chunks[0].Page)
	}
}

func TestChunkOffsetsAreRunes(t *testing.T) {
	text := "Ünïcödé first sentence here. Second one follows."
	chunks := ChunkPages([]pdf.Page{{Text: text}})
	if len(chunks) != 1 || chunks[0].End != utf8.RuneCountInString(text) {
		t.Fatalf("chunks = %+v", chunks)
	}
}

func FuzzChunkPages(f *testing.F) {
	f.Add("Hello world. This is a test.\n\nNew para")
	f.Add(words(900, "a"))
	f.Add("e.g. \"x.\" 3.14 ?!. .")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		runes := []rune(text)
		for _, c := range ChunkPages([]pdf.Page{{Number: 1, Text: text}}) {
			if c.Start < 0 || c.End > len(runes) || c.Start > c.End {
				t.Fatalf("bad offsets %d..%d of %d", c.Start, c.End, len(runes))
			}
			if len(strings.Fields(c.Text)) > chunkMaxWords {
				t.Fatalf("chunk over limit")
			}
		}
	})
}
