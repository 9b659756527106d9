package ingest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
)

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

// checkChunks checks the invariants every chunking must keep: positions
// run from 0, offsets are rune offsets into the page that select the
// chunk's text, chunks start in order, and none is over the word or the
// byte limit or splits a character.
func checkChunks(t *testing.T, pages []pdf.Page, chunks []store.Chunk) {
	t.Helper()
	runes := make(map[int][]rune, len(pages))
	for _, p := range pages {
		runes[p.Number] = []rune(p.Text)
	}
	for i, c := range chunks {
		src := runes[c.Page]
		switch {
		case c.Position != i:
			t.Fatalf("chunk %d has position %d", i, c.Position)
		case c.Start < 0 || c.End > len(src) || c.Start >= c.End:
			t.Fatalf("chunk %d: bad offsets %d..%d of %d", i, c.Start, c.End, len(src))
		case strings.TrimSpace(string(src[c.Start:c.End])) != c.Text:
			t.Fatalf("chunk %d: offsets %d..%d do not select its text", i, c.Start, c.End)
		case i > 0 && chunks[i-1].Page == c.Page && c.Start <= chunks[i-1].Start:
			t.Fatalf("chunk %d starts at %d, not after chunk %d at %d", i, c.Start, i-1, chunks[i-1].Start)
		case !utf8.ValidString(c.Text):
			t.Fatalf("chunk %d is not valid UTF-8", i)
		case len(c.Text) > chunkMaxBytes:
			t.Fatalf("chunk %d has %d bytes, over %d", i, len(c.Text), chunkMaxBytes)
		case countWords(c.Text) > chunkMaxWords || len(strings.Fields(c.Text)) > chunkMaxWords:
			t.Fatalf("chunk %d has %d words, over %d", i, countWords(c.Text), chunkMaxWords)
		}
	}
}

func FuzzChunkPages(f *testing.F) {
	f.Add("Hello world. This is a test.\n\nNew para")
	f.Add(words(900, "a"))
	f.Add("e.g. \"x.\" 3.14 ?!. .")
	f.Add("这是第一句。这是第二句！「第三句？」" + strings.Repeat("很长的句子没有标点", 200))
	f.Add(strings.Repeat("x", 3*chunkMaxBytes) + " tail. " + strings.Repeat("é", chunkMaxBytes))
	f.Add(strings.Repeat("、", 3000) + "。" + strings.Repeat("ก", 5000))
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		pages := []pdf.Page{{Number: 1, Text: text}}
		checkChunks(t, pages, ChunkPages(pages))
	})
}

// chineseText returns n characters of Chinese-looking prose: sentences of
// sentenceLen ideographs, each ended by "。", and no spaces at all.
func chineseText(n, sentenceLen int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i%(sentenceLen+1) == sentenceLen {
			b.WriteRune('。')
			continue
		}
		b.WriteRune(rune(0x4e00 + (i*7919)%0x5000))
	}
	return b.String()
}

// TestChunkPagesCJK checks that Chinese text, which has no spaces, is
// split into sentences at "。" and into chunks of the target size, counting
// each ideograph as a word.
func TestChunkPagesCJK(t *testing.T) {
	const n = 620000
	pages := []pdf.Page{{Number: 1, Text: chineseText(n, 29)}}
	chunks := ChunkPages(pages)
	checkChunks(t, pages, chunks)
	if min := n / chunkMaxWords; len(chunks) < min {
		t.Fatalf("got %d chunks of %d characters, want at least %d", len(chunks), n, min)
	}
	for i, c := range chunks {
		if i < len(chunks)-1 && (countWords(c.Text) < chunkTargetWords || !strings.HasSuffix(c.Text, "。")) {
			t.Fatalf("chunk %d has %d words and ends %q: not whole sentences of the target size", i, countWords(c.Text), c.Text[len(c.Text)-6:])
		}
		if i > 0 && c.Start > chunks[i-1].End {
			t.Fatalf("text between chunk %d and %d lost", i-1, i)
		}
	}
	if last := chunks[len(chunks)-1]; last.End != n {
		t.Fatalf("last chunk ends at %d of %d", last.End, n)
	}
}

// TestChunkPagesByteLimit checks the hard byte limit on text the word
// count cannot split: one enormous word, words of many bytes, and runes of
// several bytes, which must never be split. Each of these texts is one
// sentence split into pieces, so its chunks follow each other without gap
// or overlap.
func TestChunkPagesByteLimit(t *testing.T) {
	cases := []struct {
		name string
		text string
		// atSpaces says every split must fall after a space: the text
		// has word boundaries close enough to split at.
		atSpaces bool
		// words, when not 0, is the word count of every chunk but the last.
		words int
	}{
		{"one 5,000,000-character word", strings.Repeat("x", 5000000), false, 1},
		{"a word of 3-byte runes", strings.Repeat("ก", 100000), false, 1},
		{"a word of 2-byte runes after a short one", "a " + strings.Repeat("é", 50000), false, 0},
		{"long words", strings.TrimSpace(strings.Repeat(strings.Repeat("y", 99)+" ", 1000)), true, chunkMaxBytes / 100},
		{"ideographs without punctuation", strings.Repeat("汉", 100000), false, chunkMaxWords},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pages := []pdf.Page{{Number: 3, Text: c.text}}
			chunks := ChunkPages(pages)
			checkChunks(t, pages, chunks)
			runes := []rune(c.text)
			if chunks[0].Start != 0 || chunks[len(chunks)-1].End != len(runes) {
				t.Fatalf("chunks cover %d..%d of %d", chunks[0].Start, chunks[len(chunks)-1].End, len(runes))
			}
			for i, ch := range chunks {
				if i > 0 && ch.Start != chunks[i-1].End {
					t.Fatalf("chunk %d starts at %d, chunk %d ends at %d", i, ch.Start, i-1, chunks[i-1].End)
				}
				if c.atSpaces && i > 0 && runes[ch.Start-1] != ' ' {
					t.Fatalf("chunk %d starts inside a word", i)
				}
				if n := countWords(ch.Text); c.words != 0 && i < len(chunks)-1 && n != c.words {
					t.Fatalf("chunk %d has %d words, want %d", i, n, c.words)
				}
			}
		})
	}
}

// TestChunkByteLimitSparesProse checks that the byte limit is a guard
// against pathological text, not a second size: 400 words of Russian prose
// (two bytes a letter) fit one chunk, as 400 words of English do.
func TestChunkByteLimitSparesProse(t *testing.T) {
	// Words of 1 to 10 letters, 5.25 on average, as in running Russian.
	prose := strings.Fields("поиск документов в индексе и быстро находит текст")
	var ws []string
	for i := range 1200 {
		ws = append(ws, prose[i%len(prose)])
	}
	pages := []pdf.Page{{Number: 1, Text: strings.Join(ws, " ")}}
	chunks := ChunkPages(pages)
	checkChunks(t, pages, chunks)
	for i, c := range chunks {
		if n := countWords(c.Text); n != chunkMaxWords {
			t.Errorf("chunk %d has %d words (%d bytes), want %d", i, n, len(c.Text), chunkMaxWords)
		}
	}
}

// TestChunkOverlapIsBounded checks that sentences without words (runs of
// punctuation) cannot make the overlap repeat a chunk's text over and over.
func TestChunkOverlapIsBounded(t *testing.T) {
	text := strings.Repeat(strings.Repeat("、", 60)+"。", 2000)
	pages := []pdf.Page{{Number: 1, Text: text}}
	chunks := ChunkPages(pages)
	checkChunks(t, pages, chunks)
	total := 0
	for _, c := range chunks {
		total += len(c.Text)
	}
	if total > 2*len(text) {
		t.Fatalf("chunks hold %d bytes for %d bytes of text", total, len(text))
	}
}
