package analysis

import (
	"math/bits"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/abadojack/whatlanggo"
)

// Language detection is whatlanggo's (a Go port of whatlang, Cavnar &
// Trenkle-style trigram profiles over the script the text is written in).
// It was chosen over lingua-go after measuring both on this project's
// needs (scratch benchmarks, 2-core machine):
//
//   - size: lingua embeds every language's models, 130 MB added to the
//     binary whichever languages are enabled; whatlanggo's profiles are
//     compiled in at a few hundred KB. docsift is one binary for laptops
//     and air-gapped VMs.
//   - memory and start-up: lingua's high-accuracy models for the twenty
//     languages below took 350 MB of heap and 5 s to load; its
//     low-accuracy mode 16 MB. whatlanggo allocates nothing up front.
//   - speed: on a 100-word passage whatlanggo (with the whitelist below)
//     takes ~0.2 ms and lingua's low-accuracy mode ~0.6 ms; on a six-word
//     query 0.07 ms and 0.12 ms.
//   - accuracy on short texts: lingua is better (40/40 against 34/40 on
//     forty 3–9 word queries in twenty languages; whatlanggo's misses were
//     neighbours: es/pt, it/fr, ru/uk). That matters less here than it
//     seems: a chunk is long enough to detect well (250 words), and a query
//     is never analysed by its detected language alone (see QueryTerms and
//     index.OwnerIndex.Search): it is analysed the way each chunk was, so a
//     misread query still matches the words it shares with a chunk.
//
// Its scoring is done here, over its own profiles (trigrams.go): the same
// answers, 8 µs for a query instead of 86 and 50 µs for a passage instead
// of 380 (BenchmarkDetectQuery, BenchmarkDetectPassageTrigrams).

// detectLangs are the languages whatlanggo may answer: those analysis has
// rules for, and their near neighbours, so that a Ukrainian or Catalan
// text is not forced into Russian or Spanish rules (it is analysed as
// Neutral instead). Fewer candidates is also faster.
var detectLangs = map[whatlanggo.Lang]Lang{
	whatlanggo.Eng: English, whatlanggo.Deu: German, whatlanggo.Fra: French,
	whatlanggo.Spa: Spanish, whatlanggo.Ita: Italian, whatlanggo.Por: Portuguese,
	whatlanggo.Nld: Dutch, whatlanggo.Swe: Swedish, whatlanggo.Dan: Danish,
	whatlanggo.Nob: Norwegian, whatlanggo.Nno: Norwegian, whatlanggo.Fin: Finnish,
	whatlanggo.Hun: Hungarian, whatlanggo.Ron: Romanian, whatlanggo.Rus: Russian,
	whatlanggo.Tur: Turkish, whatlanggo.Arb: Arabic, whatlanggo.Cmn: Chinese,
	whatlanggo.Jpn: Japanese, whatlanggo.Kor: Korean,
	// Neighbours, analysed as Neutral.
	whatlanggo.Afr: Neutral, whatlanggo.Ces: Neutral, whatlanggo.Pol: Neutral,
	whatlanggo.Slv: Neutral, whatlanggo.Hrv: Neutral, whatlanggo.Est: Neutral,
	whatlanggo.Lav: Neutral, whatlanggo.Lit: Neutral, whatlanggo.Ind: Neutral,
	whatlanggo.Vie: Neutral, whatlanggo.Azj: Neutral, whatlanggo.Ukr: Neutral,
	whatlanggo.Bel: Neutral, whatlanggo.Bul: Neutral, whatlanggo.Mkd: Neutral,
	whatlanggo.Srp: Neutral, whatlanggo.Pes: Neutral, whatlanggo.Urd: Neutral,
}

var detectOptions = func() whatlanggo.Options {
	o := whatlanggo.Options{Whitelist: map[whatlanggo.Lang]bool{}}
	for l := range detectLangs {
		o.Whitelist[l] = true
	}
	return o
}()

// detectMaxBytes is how much of a text detection reads: some 80 words of
// a European language. Trigram profiles settle within a few hundred
// characters, and detection costs in proportion to its input (~1 µs a
// byte), which would otherwise be a whole chunk, twice per upload (the
// lexical index and the built-in embedder each detect).
const detectMaxBytes = 512

// Every text is detected twice, by the lexical index and by the built-in
// embedder (a chunk as it is uploaded or reindexed, a query as it is
// searched), and users repeat queries: the languages of the last memoMax
// texts are remembered, keyed by the part of the text detection reads
// (at most 2 MB). The memo is emptied when full.
const memoMax = 4096

var memo struct {
	sync.Mutex
	m map[string]detected
}

type detected struct {
	lang     Lang
	reliable bool
}

// Detect returns the language text is most likely written in, and whether
// the guess is reliable (whatlanggo's own threshold). Text in a script that
// one language owns (Hangul, kana, Han) is reliable at once; text with no
// letters is Neutral and unreliable.
func Detect(text string) (lang Lang, reliable bool) {
	text = detectPart(text)
	memo.Lock()
	d, ok := memo.m[text]
	memo.Unlock()
	if ok {
		return d.lang, d.reliable
	}
	lang, reliable = detect(text)
	memo.Lock()
	if len(memo.m) >= memoMax || memo.m == nil {
		memo.m = make(map[string]detected, memoMax)
	}
	memo.m[strings.Clone(text)] = detected{lang, reliable}
	memo.Unlock()
	return lang, reliable
}

// detectPart is the part of text that detection reads: its first
// detectMaxBytes, truncated at a character's start.
func detectPart(text string) string {
	if len(text) <= detectMaxBytes {
		return text
	}
	end := detectMaxBytes
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[:end]
}

func detect(text string) (lang Lang, reliable bool) {
	if plainEnglish(text) {
		return English, true
	}
	if hasKana(text) {
		// whatlanggo names the script with the most letters, and kanji
		// often outnumber kana in Japanese.
		return Japanese, true
	}
	return detectTrigrams(text)
}

// detectTrigrams is whatlanggo's answer, with the stop-word vote when it
// is unsure.
func detectTrigrams(text string) (lang Lang, reliable bool) {
	info := detectWhatlang(text)
	if info.Lang < 0 {
		return Neutral, false
	}
	if info.IsReliable() {
		return detectLangs[info.Lang], true
	}
	if lang, ok := stopWordVote(text); ok {
		return lang, true
	}
	if info.Confidence == 0 {
		// No evidence: languages that tie (whatlanggo ranks them in a
		// map's order, so "en" was Dutch or Afrikaans by chance, and a
		// document's terms could change with a rebuild), or one that a
		// couple of trigrams match alone. Analysed by no language's rules.
		return Neutral, false
	}
	return detectLangs[info.Lang], false
}

// Trigram profiles need more text than a query has: whatlanggo reads
// "what is it" as German. Function words are the other classic clue
// (Grefenstette, "Comparing two language identification schemes", 1995:
// they identify a language as well as trigrams from about fifteen words
// on, and short texts are mostly function words). When the trigrams are
// unsure, a text whose words include at least voteMinHits stop words of
// one language, and fewer of every other, is taken to be in it.
const (
	voteMinHits = 2
	voteWords   = 64 // words read
)

func stopWordVote(text string) (Lang, bool) {
	var hits [NumLangs]int
	words := 0
	for w := range strings.FieldsFuncSeq(text, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' && r != '’' }) {
		if words++; words > voteWords {
			break
		}
		w = compose(w)
		if isArabicScript(w) {
			w = arabicNormalize(w)
		}
		for l := range NumLangs {
			if isStop(l, w) {
				hits[l]++
			}
		}
	}
	best, second := Neutral, 0
	for l, n := range hits {
		switch {
		case n > hits[best]:
			second = hits[best]
			best = Lang(l)
		case Lang(l) != best && n > second:
			second = n
		}
	}
	return best, hits[best] >= voteMinHits && hits[best] > second
}

// Most of what docsift indexes is English, and trigram detection costs
// ~0.05 ms a passage (whatlanggo's own scoring ~0.38), a fifth of the
// rest of a small upload's indexing. A text in ASCII letters (but for a
// few: a name's accent, mojibake) whose words are for a good part
// English function words, and far fewer of any other language's, is one
// that the trigrams call English with confidence: plainEnglish answers
// it in a few microseconds, and every other text goes to whatlanggo. Its
// thresholds are strict on purpose: they give up speed on borderline
// texts (short, or mixed) rather than ever answer differently;
// TestPlainEnglishAgrees checks that it agrees with the trigrams on the
// MS MARCO sample and on every language's test set.
const (
	plainMinWords   = 20 // a query or a title is left to the trigrams
	plainMinShare   = 4  // at least 1 in plainMinShare words is an English stop word
	plainMinMargin  = 2  // and English has plainMinMargin times any other language's
	plainMaxForeign = 4  // letters outside ASCII (a name's accent, mojibake)
)

// mojibake reports whether rest, the text after a letter, begins with a C1
// control character: the mark of UTF-8 read as Latin-1 or Windows-1252,
// where a curly quote or a dash became "â" and two controls ("weâ\u0080\u0099re").
// Such a letter is a punctuation mark, not a sign of another language:
// 913 of the 5,000 passages of the MS MARCO sample hold some.
func mojibake(rest string) bool {
	r, _ := utf8.DecodeRuneInString(rest)
	return r >= 0x80 && r <= 0x9f
}

// plainEnglish reports whether text is plain English by the test above.
func plainEnglish(text string) bool {
	foreign := 0
	for i := 0; i < len(text); i++ {
		if text[i] < utf8.RuneSelf {
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if (unicode.IsLetter(r) || unicode.IsMark(r)) && !mojibake(text[i+size:]) {
			if foreign++; foreign > plainMaxForeign {
				return false
			}
		}
		i += size - 1
	}
	var hits [NumLangs]int
	words := 0
	for start := 0; start < len(text) && words < voteWords; {
		if !isASCIILetter(text[start]) {
			start++
			continue
		}
		end := start
		for end < len(text) && (isASCIILetter(text[end]) || text[end] == '\'') {
			end++
		}
		w := text[start:end]
		start = end
		words++
		w = strings.ToLower(w) // no copy for a word in lower case already
		for mask := listedStops[w]; mask != 0; mask &= mask - 1 {
			hits[bits.TrailingZeros32(mask)]++
		}
		for l, f := range stopFuncs {
			if f != nil && f(w) {
				hits[l]++
			}
		}
	}
	if words < plainMinWords || hits[English]*plainMinShare < words {
		return false
	}
	for l, n := range hits {
		if Lang(l) != English && n*plainMinMargin > hits[English] {
			return false
		}
	}
	return true
}

// listedStops is stopSets inverted: for each word, the languages whose
// list holds it, one bit each, so that plainEnglish counts a word's stop
// word hits with one lookup instead of one per language.
var listedStops = func() map[string]uint32 {
	const _ = uint32(1) << (NumLangs - 1) // a bit per language: fails to compile past 32
	m := map[string]uint32{}
	for l, set := range stopSets {
		if stopFuncs[l] != nil {
			continue // isStop asks the function, not the list
		}
		for w := range set {
			m[w] |= 1 << l
		}
	}
	return m
}()

func isASCIILetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }

func hasKana(text string) bool {
	for _, r := range text {
		if r >= 0x3040 && r <= 0x30ff && (unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)) {
			return true
		}
	}
	return false
}
