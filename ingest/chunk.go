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
const (
	chunkTargetWords  = 250
	chunkMaxWords     = 400
	chunkOverlapWords = 40
)

// span is a sentence of a page: byte offsets into the page text.
type span struct {
	start, end int
	words      int
}

// ChunkPages cuts pages into chunks. Chunks never straddle pages: each keeps
// its page's number, and its offsets are character (rune) offsets into that
// page's text. Positions run from 0 across the whole document.
func ChunkPages(pages []pdf.Page) []store.Chunk {
	var chunks []store.Chunk
	for _, p := range pages {
		for _, sp := range chunkSpans(sentences(p.Text)) {
			text := strings.TrimSpace(p.Text[sp.start:sp.end])
			if text == "" {
				continue
			}
			chunks = append(chunks, store.Chunk{
				Position: len(chunks),
				Page:     p.Number,
				Start:    utf8.RuneCountInString(p.Text[:sp.start]),
				End:      utf8.RuneCountInString(p.Text[:sp.end]),
				Text:     text,
			})
		}
	}
	return chunks
}

// chunkSpans groups consecutive sentences into chunks of about
// chunkTargetWords, never over chunkMaxWords, each starting with the last
// chunkOverlapWords' worth of whole sentences of the one before.
func chunkSpans(sents []span) []span {
	var out []span
	for i := 0; i < len(sents); {
		j, words := i, 0
		for j < len(sents) && (words == 0 || words+sents[j].words <= chunkMaxWords) {
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
		// Step back over whole sentences for the overlap, but always
		// move forward by at least one sentence.
		next, back := j, 0
		for next-1 > i && back+sents[next-1].words <= chunkOverlapWords {
			next--
			back += sents[next].words
		}
		i = next
	}
	return out
}

// sentences splits text into sentences, and sentences longer than
// chunkMaxWords into pieces of at most that many words, so that no chunk is
// ever over the limit. Paragraph breaks (a blank line) always end a sentence:
// extracted headings and list items carry no full stop.
func sentences(text string) []span {
	var out []span
	start := -1 // start of the current sentence, -1 between sentences
	words := 0
	inWord := false
	skip := 0 // closing marks already taken into the sentence before
	end := func(at int) {
		if start >= 0 {
			out = append(out, splitLong(text, span{start, at, words})...)
		}
		start, words, inWord = -1, 0, false
	}
	for i, r := range text {
		if i < skip {
			continue
		}
		if unicode.IsSpace(r) {
			inWord = false
			if r == '\n' && start >= 0 && strings.HasPrefix(strings.TrimLeft(text[i+1:], " \t\r"), "\n") {
				end(i)
			}
			continue
		}
		if start < 0 {
			start = i
		}
		if !inWord {
			words++
			inWord = true
		}
		if (r == '.' || r == '!' || r == '?') && sentenceEndsAt(text, i) {
			skip = closingEnd(text, i+1)
			end(skip)
		}
	}
	end(len(text))
	return out
}

// closingEnd extends a sentence end over closing quotes and brackets.
func closingEnd(text string, i int) int {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !strings.ContainsRune(`"')]”’»`, r) {
			break
		}
		i += size
	}
	return i
}

// sentenceEndsAt reports whether the terminal mark at text[i] ends a
// sentence: it is followed by space and then a capital, digit or opening
// mark (or the end), and it does not close a common abbreviation or an
// initial ("e.g. the", "Dr. Smith", "J. Doe").
func sentenceEndsAt(text string, i int) bool {
	rest := text[closingEnd(text, i+1):]
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	if !unicode.IsSpace(r) {
		return false // "3.14", "example.com", "e.g."
	}
	next, _ := utf8.DecodeRuneInString(strings.TrimLeftFunc(rest, unicode.IsSpace))
	if next != utf8.RuneError && !unicode.IsUpper(next) && !unicode.IsDigit(next) && !strings.ContainsRune(`"'(“‘[`, next) {
		return false
	}
	if text[i] != '.' {
		return true
	}
	word := text[:i]
	if k := strings.LastIndexFunc(word, func(r rune) bool { return unicode.IsSpace(r) || r == '(' }); k >= 0 {
		word = word[k+1:]
	}
	if utf8.RuneCountInString(word) == 1 && unicode.IsUpper([]rune(word)[0]) {
		return false // an initial
	}
	return !abbreviations[strings.ToLower(word)]
}

// abbreviations that end in a full stop without ending a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "sr": true, "jr": true, "st": true,
	"vs": true, "etc": true, "e.g": true, "i.e": true, "cf": true, "fig": true, "no": true, "vol": true,
	"approx": true, "inc": true, "ltd": true, "co": true, "corp": true, "jan": true, "feb": true,
	"mar": true, "apr": true, "jun": true, "jul": true, "aug": true, "sep": true, "sept": true,
	"oct": true, "nov": true, "dec": true, "sec": true, "ch": true, "eq": true, "ref": true,
}

// splitLong cuts a sentence of more than chunkMaxWords words at word
// boundaries into pieces of chunkMaxWords words (tables and code listings
// extracted from PDFs are often one "sentence" pages long).
func splitLong(text string, s span) []span {
	if s.words <= chunkMaxWords {
		return []span{s}
	}
	var out []span
	start, words, inWord := s.start, 0, false
	for i, r := range text[s.start:s.end] {
		at := s.start + i
		if unicode.IsSpace(r) {
			inWord = false
			continue
		}
		if !inWord {
			if words == chunkMaxWords {
				out = append(out, span{start, at, words})
				start, words = at, 0
			}
			words++
			inWord = true
		}
	}
	return append(out, span{start, s.end, words})
}
