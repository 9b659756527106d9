package ingest

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/analysis"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
)

// Chunk sizes, in words. A chunk is the unit a query returns and an answer
// cites: big enough to hold a self-contained passage, small enough that its
// one vector still says what it is about. The overlap repeats the last
// sentences of a chunk at the start of the next, so a fact that spans the
// boundary is whole in one of them.
//
// A word is a run of non-space characters, except in Chinese, Japanese and
// Korean text (see wordStep), where each ideograph, kana or Hangul
// syllable counts as one. What the sizes really bound is the embedder's
// input, which is measured in tokens, and subword tokenisers spend about a
// token per CJK character, as they spend a token or so per English word:
// counting characters gives CJK chunks the same token budget and about the
// same amount of meaning (a Chinese word is 1.5 characters on average, so
// a 250-character chunk holds some 170 words). A fixed number of bytes or
// characters per word would not fit both scripts with spaces and without.
const (
	chunkTargetWords  = 250
	chunkMaxWords     = 400
	chunkOverlapWords = 40

	// chunkMaxBytes is a hard limit on a chunk's text, whatever its words:
	// a chunk is embedded whole, stored, sent back in every query response
	// that cites it (up to top_k of them) and pasted into the answer
	// prompt, so a 5 MB "word" (base64, a hex dump, text without spaces)
	// must not become one chunk. 8 KiB is 400 words at 20 bytes a word,
	// above what prose needs in the common scripts (English averages 6
	// bytes a word with its space, Russian and Greek 12, Hindi 13, and 400
	// CJK characters are 1,200 bytes), so it binds on such text and, now
	// and then, on scripts of very long words (Malayalam), whose chunks
	// then end a sentence earlier. Five chunks of it, the default answer's
	// context, stay near 10,000 tokens, what local answer models take.
	chunkMaxBytes = 8 << 10

	// chunkOverlapBytes bounds the overlap in bytes as chunkOverlapWords
	// does in words, the same share of the maximum, so that sentences of
	// many bytes and few words (runs of punctuation) cannot make every
	// chunk repeat most of the one before.
	chunkOverlapBytes = chunkMaxBytes * chunkOverlapWords / chunkMaxWords
)

// span is a sentence of a page: byte offsets into the page text.
type span struct {
	start, end int
	words      int
}

// ChunkPages splits pages into chunks. Chunks never straddle pages: each keeps
// its page's number and sections, and its offsets are character (rune)
// offsets into that page's text. Positions run from 0 across the whole
// document.
func ChunkPages(pages []pdf.Page) []store.Chunk {
	var chunks []store.Chunk
	for _, p := range pages {
		// Chunk starts and ends only grow, so their rune offsets are
		// counted on from the previous chunk's, not from the page start:
		// a page of megabytes would otherwise be recounted per chunk.
		starts, ends := runeOffsets{text: p.Text}, runeOffsets{text: p.Text}
		for _, sp := range chunkSpans(sentences(p.Text)) {
			text := strings.TrimSpace(p.Text[sp.start:sp.end])
			if text == "" {
				continue
			}
			chunks = append(chunks, store.Chunk{
				Position: len(chunks),
				Page:     p.Number,
				Start:    starts.at(sp.start),
				End:      ends.at(sp.end),
				Text:     text,
				Sections: p.Sections,
			})
		}
	}
	return chunks
}

// runeOffsets turns byte offsets into a text into rune offsets, counting
// on from the previous offset, so that increasing offsets cost one pass.
type runeOffsets struct {
	text       string
	pos, runes int // byte offset reached and the runes before it
}

func (o *runeOffsets) at(b int) int {
	if b < o.pos {
		o.pos, o.runes = 0, 0
	}
	o.runes += utf8.RuneCountInString(o.text[o.pos:b])
	o.pos = b
	return o.runes
}

// chunkSpans groups consecutive sentences into chunks of about
// chunkTargetWords, never over chunkMaxWords or chunkMaxBytes, each
// starting with the last chunkOverlapWords' worth of whole sentences of the
// one before.
func chunkSpans(sents []span) []span {
	var out []span
	for i := 0; i < len(sents); {
		j, words := i, 0
		for j < len(sents) && (j == i || words+sents[j].words <= chunkMaxWords && sents[j].end-sents[i].start <= chunkMaxBytes) {
			words += sents[j].words
			j++
			if words >= chunkTargetWords {
				break
			}
		}
		out = append(out, span{start: sents[i].start, end: sents[j-1].end, words: words})
		if j == len(sents) {
			break
		}
		// Step back over whole sentences for the overlap, but always move
		// forward by at least one sentence, and only as far as the next
		// chunk still takes sentence j: an overlap that crowded it out
		// would make the next chunk a part of this one. A sentence counts
		// as at least one word here, so that wordless ones cannot stretch
		// the overlap.
		next, back := j, 0
		for next-1 > i {
			w := max(1, sents[next-1].words)
			if back+w > chunkOverlapWords ||
				sents[j-1].end-sents[next-1].start > chunkOverlapBytes ||
				back+w+sents[j].words > chunkMaxWords ||
				sents[j].end-sents[next-1].start > chunkMaxBytes {
				break
			}
			next--
			back += w
		}
		i = next
	}
	return out
}

// sentences splits text into sentences (see analysis.Sentences), and
// sentences over chunkMaxWords or chunkMaxBytes into pieces within both
// (see splitLong), so that no chunk is ever over a limit.
func sentences(text string) []span {
	var out []span
	analysis.Sentences(text, func(start, end int) {
		out = append(out, splitLong(text, start, end)...)
	})
	return out
}

// wordStep says whether r starts a word, given whether the rune before it
// was inside one, and whether a word goes on after r. Spaces separate
// words; in CJK text, which has no spaces, each ideograph, kana or Hangul
// syllable is a word of its own (see the chunk sizes above) and CJK
// punctuation separates like a space.
func wordStep(r rune, inWord bool) (starts, in bool) {
	switch {
	case unicode.IsSpace(r):
		return false, false
	case analysis.IsCJK(r):
		return true, false
	case isCJKPunct(r):
		return false, false
	}
	return !inWord, true
}

// countWords counts the words of s the way chunk sizes are measured.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		var starts bool
		if starts, in = wordStep(r, in); starts {
			n++
		}
	}
	return n
}

// isCJKPunct reports CJK and fullwidth punctuation (、。「」！ and the like):
// all punctuation from the CJK Symbols and Punctuation block on.
func isCJKPunct(r rune) bool {
	return r >= 0x3000 && unicode.IsPunct(r)
}

// splitLong measures the sentence text[from:to] and splits it into pieces
// within chunkMaxWords and chunkMaxBytes: tables and code listings
// extracted from PDFs are often one "sentence" pages long, and text
// without spaces (a long URL, base64, a language written without them) one
// word. A piece ends before a word when one fits, inside a word, at a
// character boundary, only when that word alone is over the byte limit.
func splitLong(text string, from, to int) []span {
	var out []span
	start, words, inWord := from, 0, false
	lastWord, wordsBefore := -1, 0 // last word start inside the piece, and the piece's words before it
	splitAt := func(at, n int) {
		out = append(out, span{start, at, n})
		start, words, lastWord = at, words-n, -1
	}
	for i, r := range text[from:to] {
		at := from + i
		var starts bool
		starts, inWord = wordStep(r, inWord)
		if starts && words == chunkMaxWords {
			splitAt(at, words)
		}
		_, size := utf8.DecodeRuneInString(text[at:to])
		if at+size-start > chunkMaxBytes {
			switch {
			case starts:
				splitAt(at, words)
			case lastWord > start:
				splitAt(lastWord, wordsBefore)
			}
			if at+size-start > chunkMaxBytes {
				// One word over the limit: split it here; its rest is a
				// word of the next piece.
				splitAt(at, words)
				if inWord && !starts {
					words = 1
				}
			}
		}
		if starts {
			if at > start {
				lastWord, wordsBefore = at, words
			}
			words++
		}
	}
	return append(out, span{start, to, words})
}
