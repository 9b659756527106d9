package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Folding makes the spellings people actually type match: a query typed
// without accents finds the accented word ("resume" finds "résumé"),
// full-width and ligature forms match their plain letters, and every
// script's digits match ASCII ones.
//
// The rule is Unicode's: compatibility decomposition (NFKD) and then
// dropping the combining marks (category Mn), as Lucene's and SQLite
// FTS5's unicode61 diacritic removal do. It is applied only to Latin, Greek
// and Cyrillic words: in Arabic (see arabic.go), Indic scripts, Hangul and
// kana the marks are part of the letter, and dropping them would merge
// different words (ガ is not カ).
//
// Folding comes after stemming where the language's Snowball stemmer is
// written for its accented alphabet (French "-ité", Spanish "-ción",
// Hungarian "-ről"): a word is stemmed as written and its stem folded, so
// an accent a query leaves out still costs the conflation of that word's
// forms. The stemmers of foldFirst treat accented letters as plain ones
// (the Dutch and German algorithms remove them themselves, the English
// one knows none), and there a word is folded first, so "resume" and
// "résumé" stem alike.
var foldFirst = [NumLangs]bool{English: true, German: true, Dutch: true, Neutral: true}

// letterFolds are the Latin letters that NFKD leaves whole but that a
// reader of the folded form writes without their stroke or as two letters:
// Lucene's ASCIIFoldingFilter maps them the same way. ı (dotless i) folds
// to i, as a query typed on a keyboard without it spells it.
var letterFolds = map[rune]string{
	'ø': "o", 'æ': "ae", 'œ': "oe", 'ł': "l", 'đ': "d", 'ð': "d", 'þ': "th",
	'ß': "ss", 'ı': "i", 'ς': "σ",
}

// fold returns w with its marks dropped as described above. w is lower
// case; a plain ASCII word comes back as it is, without allocating.
func fold(w string) string {
	if isASCII(w) {
		return w
	}
	var b strings.Builder
	b.Grow(len(w))
	for _, r := range norm.NFKD.String(w) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if s, ok := letterFolds[r]; ok {
			b.WriteString(s)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// compose returns w in NFKC form, lower case, with decimal digits of every
// script as ASCII digits: the form stemmers and stop lists expect. Full
// width letters, ligatures (ﬁ) and presentation forms become the plain
// letters they stand for.
func compose(w string) string {
	if isASCII(w) {
		if hasUpperASCII(w) {
			return strings.ToLower(w)
		}
		return w
	}
	w = norm.NFKC.String(w)
	var b strings.Builder
	b.Grow(len(w))
	for _, r := range w {
		switch {
		case r < utf8.RuneSelf:
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
		case unicode.IsDigit(r):
			r = '0' + digitValue(r)
		default:
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// digitValue is the value of a decimal digit (category Nd) of any script.
// Unicode encodes every script's decimal digits as runs from zero to nine,
// and where runs touch (the mathematical digits) they still start at zero,
// so the value is the distance from the start of the contiguous block,
// modulo ten.
func digitValue(r rune) rune {
	start := r
	for start > 0 && unicode.IsDigit(start-1) {
		start--
	}
	return (r - start) % 10
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func hasUpperASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// foldable reports whether w is in a script whose marks fold away.
func foldable(w string) bool {
	for _, r := range w {
		if r < utf8.RuneSelf || unicode.Is(unicode.Mn, r) {
			continue
		}
		return unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic)
	}
	return true
}
