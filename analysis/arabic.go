package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Arabic is written with optional short-vowel marks, several forms of alef,
// and letters that writers interchange at the end of a word, and it
// attaches articles, conjunctions and pronouns to the word. Full
// morphological stemming needs a lexicon; light stemming, stripping a
// small set of frequent prefixes and suffixes, does as well or better for
// retrieval (Larkey, Ballesteros & Connell, "Light Stemming for Arabic
// Information Retrieval", 2007), and is what Lucene's Arabic analyzer
// does. Both steps below follow that paper's "light10" stemmer.

// arabicNormalize removes what writers add or vary freely: diacritics
// (the harakat, superscript alef and Quranic marks), tatweel (the
// stretching stroke), and the spelling variants of alef (آ أ إ ٱ → ا),
// alef maksura (ى → ي) and ta marbuta (ة → ه). w is in NFKC form, so
// presentation forms are already plain letters.
func arabicNormalize(w string) string {
	var b strings.Builder
	b.Grow(len(w))
	for _, r := range w {
		switch {
		case r == 0x0640: // tatweel
		case r >= 0x064B && r <= 0x065F, r == 0x0670, r >= 0x06D6 && r <= 0x06ED:
			// harakat, superscript alef, Quranic annotation marks
		case r == 'آ', r == 'أ', r == 'إ', r == 'ٱ':
			b.WriteRune('ا')
		case r == 'ى':
			b.WriteRune('ي')
		case r == 'ة':
			b.WriteRune('ه')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// light10 prefixes and suffixes, in the paper's order, on normalised text
// (so its ة and ية appear as ه and يه).
var (
	arabicArticles = []string{"وال", "بال", "كال", "فال", "لل", "ال"}
	arabicSuffixes = []string{"ها", "ان", "ات", "ون", "ين", "يه", "ه", "ي"}
)

// arabicLightStem is light10: drop a leading و ("and") when three or more
// letters remain; then one definite article (ال with or without a
// preposition) when two or more remain; then each suffix of the list in
// turn, when found at the end and two or more letters remain.
func arabicLightStem(w string) string {
	n := utf8.RuneCountInString(w)
	if strings.HasPrefix(w, "و") && n-1 >= 3 {
		w = w[len("و"):]
		n--
	}
	for _, a := range arabicArticles {
		if strings.HasPrefix(w, a) && n-utf8.RuneCountInString(a) >= 2 {
			w = w[len(a):]
			n -= utf8.RuneCountInString(a)
			break
		}
	}
	for _, s := range arabicSuffixes {
		if k := utf8.RuneCountInString(s); strings.HasSuffix(w, s) && n-k >= 2 {
			w = w[:len(w)-len(s)]
			n -= k
		}
	}
	return w
}

// isArabicScript reports whether w's first letter is Arabic.
func isArabicScript(w string) bool {
	for _, r := range w {
		if unicode.IsLetter(r) {
			return unicode.Is(unicode.Arabic, r)
		}
	}
	return false
}
