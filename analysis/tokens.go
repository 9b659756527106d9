package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Splitting text into words and runs of CJK text (see the package doc).

// Character classes.
const (
	classOther = iota
	classWord
	classBigram
	classApostrophe
	classJoiner
	classIgnorable
)

func classify(r rune) int {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return classWord
		case r == '\'':
			return classApostrophe
		case r == '-', r == '_', r == '.':
			return classJoiner
		}
		return classOther
	}
	switch r {
	case '’', '‘', 'ʼ':
		return classApostrophe
	case '‐', '‑', '‒', '–', '−', '﹣', '－', '＿':
		// hyphen, non-breaking hyphen, figure dash, en dash, minus sign
		// and their small and full-width forms join like '-': text from
		// PDFs and word processors uses them inside words and numbers.
		// The em dash separates clauses and stays a separator.
		return classJoiner
	case 0xAD, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF:
		// soft hyphen, zero-width space and (non-)joiners, word joiner,
		// BOM: invisible, and inside a word they must not split it.
		return classIgnorable
	case 0x30FC, 0xFF70, 0x309B, 0x309C, 0xFF9E, 0xFF9F:
		// the prolonged sound and voicing marks of kana, full and half
		// width, are of script Common but part of kana words.
		return classBigram
	}
	switch {
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
		unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar):
		return classBigram
	case unicode.IsLetter(r), unicode.IsNumber(r), unicode.IsMark(r):
		return classWord
	}
	return classOther
}

func (a *analyzer) run(text string) {
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch classify(r) {
		case classWord:
			i = a.compound(text, i)
		case classBigram:
			j := i + size
			for j < len(text) {
				r, n := utf8.DecodeRuneInString(text[j:])
				if c := classify(r); c != classBigram && c != classIgnorable {
					break
				}
				j += n
			}
			a.bigrams(text[i:j])
			a.prev = ""
			i = j
		default:
			i += size
		}
	}
}

// nextIsWord reports whether the rune at text[i:] starts a word.
func nextIsWord(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return classify(r) == classWord
}

// compound reads the compound starting at text[i] (a word rune), handles
// it, and returns where it ends. A joiner or apostrophe belongs to the
// compound only between two word runes.
func (a *analyzer) compound(text string, i int) int {
	a.segs = a.segs[:0]
	start, j := i, i
	plain := true // lower-case ASCII letters, one segment: most words
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		switch classify(r) {
		case classWord:
			plain = plain && 'a' <= r && r <= 'z'
			j += size
			continue
		case classIgnorable:
			plain = false
			j += size
			continue
		case classApostrophe:
			if nextIsWord(text, j+size) {
				plain = false
				j += size
				continue
			}
		case classJoiner:
			if nextIsWord(text, j+size) {
				plain = false
				a.segs = append(a.segs, text[start:j])
				j += size
				start = j
				continue
			}
		}
		break
	}
	a.segs = append(a.segs, text[start:j])
	a.handleCompound(plain)
	return j
}

// handleCompound emits the terms of the segments in a.segs. plain says
// they are one word of lower-case ASCII letters, which cleaning, case
// parts, composition and folding would each read through to leave alone.
func (a *analyzer) handleCompound(plain bool) {
	a.parts = a.parts[:0]
	split := false // some segment has parts of its own
	if plain {
		a.parts = append(a.parts, a.segs[0])
	} else {
		for k, s := range a.segs {
			s = a.clean(s)
			a.segs[k] = s
			n := len(a.parts)
			a.parts = appendCaseParts(a.parts, s)
			split = split || len(a.parts)-n > 1
		}
	}
	if a.words != nil {
		for _, p := range a.parts {
			if w := compose(p); w != "" && len(w) <= maxTermLen {
				a.words(fold(w))
			}
		}
		if a.fn == nil {
			return
		}
	}
	for i, p := range a.parts {
		emitted := a.word(p, false, plain)
		if a.known == nil {
			continue
		}
		// Only separate words are joined: the parts of one compound
		// ("read-only") are given joined below.
		if i == 0 && emitted && a.prev != "" {
			a.joinCompound(a.prev, p)
		}
		if i == len(a.parts)-1 {
			a.prev = ""
			if emitted {
				a.prev = p
			}
		}
	}
	if len(a.parts) == 1 {
		return
	}
	if split {
		for _, s := range a.segs {
			if len(appendCaseParts(nil, s)) > 1 {
				a.word(s, true, false)
			}
		}
	}
	if len(a.segs) > 1 && !allDigits(a.segs) {
		a.word(strings.Join(a.segs, ""), true, false)
	}
}

// elisions are the articles and pronouns French and Italian write elided
// onto the next word ("l'homme", "dell'anno"): the word is what follows
// them. Lists as Lucene's ElisionFilter defaults.
var elisions = map[Lang]map[string]bool{
	French: set("l m t qu n s j d c jusqu quoiqu lorsqu puisqu"),
	Italian: set("c l all dall dell nell sull coll pell gl agl dagl degl negl " +
		"sugl un m t s v d"),
}

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// clean drops the invisible characters of a segment and handles its
// apostrophes: an elided article is removed, and any other apostrophe is
// dropped, so "don't" and "dont" (and the same word with a curly quote)
// match.
func (a *analyzer) clean(s string) string {
	if isASCII(s) && strings.IndexByte(s, '\'') < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch classify(r) {
		case classIgnorable:
		case classApostrophe:
			if el := elisions[a.lang]; el != nil && el[strings.ToLower(b.String())] {
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// appendCaseParts appends the parts of a word split where it changes from
// lower to upper case ("camelCase"), from an acronym to a capitalised word
// ("XMLParser") or between letters and digits ("covid19"); or the word
// whole when it has no such change or a part would be a single character
// ("iPhone", "x86", "mp3" stay whole).
func appendCaseParts(dst []string, w string) []string {
	if !hasCaseOrDigitChange(w) {
		return append(dst, w)
	}
	n := len(dst)
	start := 0
	// The last two non-mark runes before i: their kinds and offsets.
	prev, prev2 := kindOther, kindOther
	prevAt := 0
	for i, r := range w {
		if unicode.IsMark(r) {
			continue // a mark belongs to the letter before it
		}
		k := runeKind(r)
		split := -1
		switch {
		case prev == kindLower && k == kindUpper,
			prev == kindDigit && (k == kindLower || k == kindUpper),
			(prev == kindLower || prev == kindUpper) && k == kindDigit:
			split = i
		case prev2 == kindUpper && prev == kindUpper && k == kindLower && lowerFollows(w[i:]):
			// "XMLParser": the P starts the next part; but "CPUs" and
			// "URLs" are plurals, not an acronym and a word.
			split = prevAt
		}
		if split > start {
			dst = append(dst, w[start:split])
			start = split
		}
		prev2, prev, prevAt = prev, k, i
	}
	dst = append(dst, w[start:])
	for _, p := range dst[n:] {
		if utf8.RuneCountInString(p) < 2 {
			return append(dst[:n], w)
		}
	}
	return dst
}

// lowerFollows reports whether s starts with two lower-case letters.
func lowerFollows(s string) bool {
	n := 0
	for _, r := range s {
		if runeKind(r) != kindLower {
			break
		}
		if n++; n == 2 {
			return true
		}
	}
	return false
}

const (
	kindOther = iota
	kindLower
	kindUpper
	kindDigit
)

func runeKind(r rune) int {
	switch {
	case '0' <= r && r <= '9', r >= utf8.RuneSelf && unicode.IsDigit(r):
		return kindDigit
	case 'a' <= r && r <= 'z':
		return kindLower
	case 'A' <= r && r <= 'Z':
		return kindUpper
	case r < utf8.RuneSelf:
		return kindOther
	case unicode.IsUpper(r):
		return kindUpper
	case unicode.IsLower(r):
		return kindLower
	}
	return kindOther
}

// hasCaseOrDigitChange is the fast test before appendCaseParts' slow one:
// a word of lower-case letters only, the common case, has no parts.
func hasCaseOrDigitChange(w string) bool {
	digits, letters := false, false
	for i, r := range w {
		switch runeKind(r) {
		case kindUpper:
			if i > 0 {
				return true
			}
			letters = true
		case kindLower:
			letters = true
		case kindDigit:
			digits = true
		}
	}
	return digits && letters
}

func allDigits(segs []string) bool {
	for _, s := range segs {
		for _, r := range s {
			if !unicode.IsDigit(r) {
				return false
			}
		}
	}
	return true
}

func hasDigit(w string) bool {
	for _, r := range w {
		if unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// bigrams emits the overlapping character pairs of a run of a script
// written without spaces; a run of one character is a term of its own.
func (a *analyzer) bigrams(run string) {
	run = composeRun(run)
	if a.words != nil {
		a.words(run)
		if a.fn == nil {
			return
		}
	}
	var rs [2]rune
	n := 0
	for _, r := range run {
		if classify(r) == classIgnorable {
			continue
		}
		if n == 2 {
			rs[0] = rs[1]
			n = 1
		}
		rs[n] = r
		n++
		if n == 2 {
			a.emitRaw(string(rs[:2]))
		}
	}
	if n == 1 && utf8.RuneCountInString(run) == 1 {
		a.emitRaw(string(rs[:1]))
	}
}

// composeRun puts a run of a script without spaces in NFKC form: half-width kana
// become full-width, compatibility ideographs the unified ones.
func composeRun(run string) string {
	if r := []rune(run); len(r) > 0 && r[0] < 0xF900 {
		// Most runs are in the main blocks, which NFKC leaves alone;
		// only check the rest.
		ok := true
		for _, c := range r {
			if c >= 0xF900 {
				ok = false
				break
			}
		}
		if ok {
			return run
		}
	}
	return compose(run)
}

func (a *analyzer) emitRaw(t string) { a.fn(Term{Text: t}) }

// Spaced reports whether w is a word of a script written with spaces
// between words, as opposed to a run of CJK (or Thai, …) text, which
// analysis splits into character bigrams.
func Spaced(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return classify(r) != classBigram
}
