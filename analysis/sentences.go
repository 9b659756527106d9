package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sentences calls fn with the byte range of each sentence of text, in
// order, spaces around it left out. A blank line always ends a sentence
// (headings and list items carry no full stop); otherwise a sentence ends
// at a terminal mark that sentenceEndsAt accepts, with the closing quotes
// and brackets after it.
//
// Chunking and extractive answers both split text here, so that a chunk
// never ends where an answer's quote would go on, nor the other way
// round. The rules err on the side of going on: a sentence split in two
// loses its fact ("…bis zum 31." for "bis zum 31. Juli"), two sentences
// taken as one only make a longer quote.
func Sentences(text string, fn func(start, end int)) {
	start := -1 // start of the current sentence, -1 between sentences
	skip := 0   // closing marks already taken into the sentence before
	end := func(at int) {
		if start >= 0 {
			fn(start, len(strings.TrimRightFunc(text[:at], unicode.IsSpace)))
		}
		start = -1
	}
	for i, r := range text {
		if i < skip {
			continue
		}
		if isSpace(r) {
			if r == '\n' && start >= 0 && strings.HasPrefix(strings.TrimLeft(text[i+1:], " \t\r"), "\n") {
				end(i)
			}
			continue
		}
		if start < 0 {
			start = i
		}
		if r < utf8.RuneSelf && r != '.' && r != '!' && r != '?' {
			continue // most of any text, and no stop
		}
		switch {
		case isCJKStop(r) && cjkSentenceEndsAt(text, i):
			_, size := utf8.DecodeRuneInString(text[i:])
			skip = closingEnd(text, i+size)
			end(skip)
		case isTerminal(r) && sentenceEndsAt(text, i):
			_, size := utf8.DecodeRuneInString(text[i:])
			skip = closingEnd(text, i+size)
			end(skip)
		}
	}
	end(len(text))
}

// isSpace is unicode.IsSpace, quicker on ASCII: Sentences asks it of
// every character.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

// isTerminal reports the marks that end a sentence when a space follows them:
// the full stop, exclamation and question marks, the Devanagari danda and
// double danda (Hindi, Marathi, Nepali, Sanskrit), the Arabic question
// mark and the Urdu full stop.
func isTerminal(r rune) bool {
	switch r {
	case '.', '!', '?', '।', '॥', '؟', '۔':
		return true
	}
	return false
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

// IsCJK reports an ideograph, kana or Hangul syllable (or jamo), or the
// katakana length mark, which stands for a syllable too: the scripts
// whose sentences follow one another with no space between.
func IsCJK(r rune) bool {
	if r < 0x1100 { // below Hangul Jamo, the first of these blocks
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 'ー' || r == 'ｰ'
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
	if isCJKStop(next) || isTerminal(next) {
		return false
	}
	return r != '．' || j > i+size || !unicode.IsDigit(next) && !unicode.Is(unicode.Latin, next)
}

// closingMarks are the quotes and brackets that may follow a sentence's
// final mark and belong to it: Western ones, and the CJK corner brackets,
// lenticular and angle brackets and fullwidth forms.
const closingMarks = `"')]”’»」』）】〕〗〙〛〉》〞＂＇］｝｣`

// closingEnd extends a sentence end over closing quotes and brackets,
// and over reference marks ("…in 2023.[3][4] Next").
func closingEnd(text string, i int) int {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '[' {
			size = referenceLen(text[i:])
		} else if !strings.ContainsRune(closingMarks, r) {
			size = 0
		}
		if size == 0 {
			break
		}
		i += size
	}
	return i
}

// referenceLen is the length of the reference mark "[n]", n of one to
// three digits, that s begins with, or 0.
func referenceLen(s string) int {
	for i := 1; i < len(s) && i <= 4; i++ {
		switch {
		case s[i] == ']' && i > 1:
			return i + 1
		case s[i] < '0' || s[i] > '9':
			return 0
		}
	}
	return 0
}

// sentenceEndsAt reports whether the terminal mark at text[i] ends a
// sentence: it is followed by space and then something that may start a
// sentence (see startsSentence; after ? ! and the like, a number too), or
// the end, or directly by CJK text, which puts no space after a sentence;
// and a full stop does not close an abbreviation, an initial or an
// ordinal (see ordinary and shortNumber).
func sentenceEndsAt(text string, i int) bool {
	_, size := utf8.DecodeRuneInString(text[i:])
	rest := text[closingEnd(text, i+size):]
	next := strings.TrimLeftFunc(rest, unicode.IsSpace)
	if next == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	switch {
	case IsCJK(r):
	case !unicode.IsSpace(r):
		return false // "3.14", "example.com", "e.g."
	case text[i] != '.':
		// No abbreviation ends in "?", and a number after one starts a
		// sentence: "Was it good? 42 people said yes."
		n, _ := utf8.DecodeRuneInString(next)
		return startsSentence(next) || unicode.IsDigit(n)
	case !startsSentence(next):
		return false
	}
	if text[i] != '.' {
		return true
	}
	// Only the last few bytes can hold an abbreviation, an initial or an
	// ordinal; looking no further keeps a text of full stops and no
	// spaces linear.
	from := max(0, i-maxAbbreviationBytes-1)
	word := text[from:i]
	if k := strings.LastIndexFunc(word, func(r rune) bool { return unicode.IsSpace(r) || r == '(' }); k >= 0 {
		_, size := utf8.DecodeRuneInString(word[k:])
		word = word[k+size:]
	} else if from > 0 {
		return true // a word longer than any abbreviation
	}
	if shortNumber(word) {
		// An ordinal ("am 31. Juli", "der 2. Weltkrieg": German and the
		// Nordic, Slavic, Baltic, Hungarian and Turkish languages write
		// them so) or a list's number ("1. Install it"), unless a list's
		// next item follows ("…page 19. 2. If the name…"). An English
		// sentence that ends in such a number runs on into the next,
		// which costs less than a date split from its month.
		return listItem(next)
	}
	return ordinary(word)
}

// shortNumber reports whether word is a number of one or two digits.
func shortNumber(word string) bool {
	return word != "" && len(word) <= 2 && strings.Trim(word, "0123456789") == ""
}

// listItem reports whether s starts with a list's number and its item:
// "2. If", "10) Run"; not "12. 2025", a date's month and year.
func listItem(s string) bool {
	rest := strings.TrimLeft(s, "0123456789")
	if len(rest) == len(s) || len(rest) < 3 || rest[0] != '.' && rest[0] != ')' || rest[1] != ' ' {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest[2:])
	return unicode.IsLetter(r) && !unicode.IsLower(r)
}

// ordinary reports whether word, followed by a full stop, is an ordinary
// word that the stop ends a sentence after. It is not when it is
//
//   - an initial ("J. Doe", "z. B."), or letters of one or two apart by
//     stops ("U.S.", "e.g.", "z.B.", "a.m.", "т.е.", "Ph.D."; "app.js."
//     and "bbc.co.uk." are ordinary);
//   - a common abbreviation of the languages analysis knows (see
//     abbreviations), whichever language the text is in: "Nr." abbreviates
//     in an English text too, and few of them end sentences anywhere.
func ordinary(word string) bool {
	if abbreviations[strings.ToLower(word)] {
		return false
	}
	for part := range strings.SplitSeq(word, ".") {
		if n := utf8.RuneCountInString(part); n == 0 || n > 2 || strings.ContainsFunc(part, func(r rune) bool { return !unicode.IsLetter(r) }) {
			return true
		}
	}
	// Parts of one or two letters: an initial, or letters apart by stops;
	// but a word of two letters alone ("in", "it") ends a sentence.
	return !strings.Contains(word, ".") && utf8.RuneCountInString(word) == 2
}

// startsSentence reports whether s, the text after a terminal mark and
// its space, may open a sentence: with a capital, an opening quote or
// bracket, a letter of a script without case (Korean, Chinese, Arabic,
// Hindi…), whose sentences have no capital to start with, or a list's
// number ("2. Run it", "2) Run it"). A lower-case letter continues the
// sentence ("e.g. the"), and so does any other number ("ca. 30 Minuten",
// "Fig. 2 shows"): style guides spell out a number that opens a sentence.
func startsSentence(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	switch {
	case unicode.IsDigit(r):
		digits := strings.TrimLeftFunc(s, unicode.IsDigit)
		return strings.HasPrefix(digits, ". ") || strings.HasPrefix(digits, ") ")
	case unicode.IsUpper(r) || strings.ContainsRune(`"'(“‘[「『（《〈【`, r):
		return true
	}
	return unicode.IsLetter(r) && !unicode.IsLower(r) && !unicode.IsTitle(r)
}

// maxAbbreviationBytes is longer than any entry of abbreviations.
const maxAbbreviationBytes = 8

// abbreviations end in a full stop without ending a sentence: lower-case,
// without their last stop. Those of letters of one to three apart by
// stops ("e.g", "z.b") need no entry (see ordinary).
var abbreviations = set(
	// English
	"mr mrs ms dr prof sr jr st vs etc cf fig figs no vol approx inc ltd co corp " +
		"jan feb mar apr jun jul aug sep sept oct nov dec sec ch eq ref al pp " +
		// German
		"nr ca bzw usw vgl evtl ggf inkl zzgl str abs abb bd hr fr geb tel " +
		// French, Spanish, Italian, Portuguese, Dutch
		"mme mlle env éd pág núm sra sres dto ej pag sig dott ing blz bijv dhr mevr " +
		// Russian
		"ул г гг др см стр тыс руб рис им")
