package ingest

import (
	"strings"
	"unicode"
	"unicode/utf8"

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

// ChunkPages cuts pages into chunks. Chunks never straddle pages: each keeps
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

// sentences splits text into sentences, and sentences over chunkMaxWords or
// chunkMaxBytes into pieces within both (see splitLong), so that no chunk
// is ever over a limit. Paragraph breaks (a blank line) always end a
// sentence: extracted headings and list items carry no full stop.
func sentences(text string) []span {
	var out []span
	start := -1 // start of the current sentence, -1 between sentences
	skip := 0   // closing marks already taken into the sentence before
	end := func(at int) {
		if start >= 0 {
			out = append(out, splitLong(text, start, at)...)
		}
		start = -1
	}
	for i, r := range text {
		if i < skip {
			continue
		}
		if unicode.IsSpace(r) {
			if r == '\n' && start >= 0 && strings.HasPrefix(strings.TrimLeft(text[i+1:], " \t\r"), "\n") {
				end(i)
			}
			continue
		}
		if start < 0 {
			start = i
		}
		switch {
		case isCJKStop(r) && cjkSentenceEndsAt(text, i):
			_, size := utf8.DecodeRuneInString(text[i:])
			skip = closingEnd(text, i+size)
			end(skip)
		case (r == '.' || r == '!' || r == '?') && sentenceEndsAt(text, i):
			skip = closingEnd(text, i+1)
			end(skip)
		}
	}
	end(len(text))
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
	case isCJK(r):
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

// isCJK reports an ideograph, kana or Hangul syllable (or jamo), or the
// katakana length mark, which stands for a syllable too.
func isCJK(r rune) bool {
	if r < 0x1100 { // below Hangul Jamo, the first of these blocks
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 'ー' || r == 'ｰ'
}

// isCJKPunct reports CJK and fullwidth punctuation (、。「」！ and the like):
// all punctuation from the CJK Symbols and Punctuation block on.
func isCJKPunct(r rune) bool {
	return r >= 0x3000 && unicode.IsPunct(r)
}

// isCJKStop reports the marks that end a sentence in CJK text: the
// ideographic full stop and its halfwidth, vertical and small forms, the
// fullwidth full stop (used for it in Chinese scientific writing), and the
// fullwidth and small exclamation and question marks; also the double
// marks (‼ ⁇ ⁈ ⁉), which end a sentence in any script.
func isCJKStop(r rune) bool {
	switch r {
	case '。', '｡', '︒', '﹒', '．', '！', '？', '﹗', '﹖', '‼', '⁇', '⁈', '⁉':
		return true
	}
	return false
}

// cjkSentenceEndsAt reports whether the CJK stop at text[i] ends a
// sentence. CJK text puts no space after one, so it does unless another
// stop follows ("？！" ends at its last mark), or it is a fullwidth full
// stop inside a number or a Latin word ("３．１４").
func cjkSentenceEndsAt(text string, i int) bool {
	r, size := utf8.DecodeRuneInString(text[i:])
	j := closingEnd(text, i+size)
	if j == len(text) {
		return true
	}
	next, _ := utf8.DecodeRuneInString(text[j:])
	if isCJKStop(next) || next == '.' || next == '!' || next == '?' {
		return false
	}
	return r != '．' || j > i+size || !unicode.IsDigit(next) && !unicode.Is(unicode.Latin, next)
}

// closingMarks are the quotes and brackets that may follow a sentence's
// final mark and belong to it: Western ones, and the CJK corner brackets,
// lenticular and angle brackets and fullwidth forms.
const closingMarks = `"')]”’»」』）】〕〗〙〛〉》〞＂＇］｝｣`

// closingEnd extends a sentence end over closing quotes and brackets.
func closingEnd(text string, i int) int {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !strings.ContainsRune(closingMarks, r) {
			break
		}
		i += size
	}
	return i
}

// sentenceEndsAt reports whether the terminal mark at text[i] ends a
// sentence: it is followed by space and then something that may start a
// sentence (see startsSentence), or the end, or directly by CJK text, which
// puts no space after a sentence; and it does not close a common
// abbreviation or an initial ("e.g. the", "Dr. Smith", "J. Doe").
func sentenceEndsAt(text string, i int) bool {
	rest := text[closingEnd(text, i+1):]
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	switch {
	case isCJK(r):
	case !unicode.IsSpace(r):
		return false // "3.14", "example.com", "e.g."
	default:
		next, _ := utf8.DecodeRuneInString(strings.TrimLeftFunc(rest, unicode.IsSpace))
		if next != utf8.RuneError && !startsSentence(next) {
			return false
		}
	}
	if text[i] != '.' {
		return true
	}
	// Only the last few bytes can hold an abbreviation or an initial;
	// looking no further keeps a text of full stops and no spaces linear.
	from := max(0, i-maxAbbreviationBytes-1)
	word := text[from:i]
	k := strings.LastIndexFunc(word, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
	if k < 0 && from > 0 {
		return true // a word longer than any abbreviation
	}
	word = word[k+1:]
	if utf8.RuneCountInString(word) == 1 && unicode.IsUpper([]rune(word)[0]) {
		return false // an initial
	}
	return !abbreviations[strings.ToLower(word)]
}

// startsSentence reports whether r may open a sentence: a capital, a
// digit, an opening quote or bracket, or a letter of a script without
// case (Korean, Chinese, Arabic, Hindi…), whose sentences have no capital
// to start with. A lower-case letter continues the sentence ("e.g. the").
func startsSentence(r rune) bool {
	if unicode.IsUpper(r) || unicode.IsDigit(r) || strings.ContainsRune(`"'(“‘[「『（《〈【`, r) {
		return true
	}
	return unicode.IsLetter(r) && !unicode.IsLower(r) && !unicode.IsTitle(r)
}

// maxAbbreviationBytes is longer than any entry of abbreviations.
const maxAbbreviationBytes = 8

// abbreviations that end in a full stop without ending a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "sr": true, "jr": true, "st": true,
	"vs": true, "etc": true, "e.g": true, "i.e": true, "cf": true, "fig": true, "no": true, "vol": true,
	"approx": true, "inc": true, "ltd": true, "co": true, "corp": true, "jan": true, "feb": true,
	"mar": true, "apr": true, "jun": true, "jul": true, "aug": true, "sep": true, "sept": true,
	"oct": true, "nov": true, "dec": true, "sec": true, "ch": true, "eq": true, "ref": true,
}

// splitLong measures the sentence text[from:to] and cuts it into pieces
// within chunkMaxWords and chunkMaxBytes: tables and code listings
// extracted from PDFs are often one "sentence" pages long, and text
// without spaces (a long URL, base64, a language written without them) one
// word. A piece ends before a word when one fits, inside a word, at a
// character boundary, only when that word alone is over the byte limit.
func splitLong(text string, from, to int) []span {
	var out []span
	start, words, inWord := from, 0, false
	lastWord, wordsBefore := -1, 0 // last word start inside the piece, and the piece's words before it
	cut := func(at, n int) {
		out = append(out, span{start, at, n})
		start, words, lastWord = at, words-n, -1
	}
	for i, r := range text[from:to] {
		at := from + i
		var starts bool
		starts, inWord = wordStep(r, inWord)
		if starts && words == chunkMaxWords {
			cut(at, words)
		}
		_, size := utf8.DecodeRuneInString(text[at:to])
		if at+size-start > chunkMaxBytes {
			switch {
			case starts:
				cut(at, words)
			case lastWord > start:
				cut(lastWord, wordsBefore)
			}
			if at+size-start > chunkMaxBytes {
				// One word over the limit: cut it here; its rest is a
				// word of the next piece.
				cut(at, words)
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
