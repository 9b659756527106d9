// Package analysis turns text into the terms that search compares. The
// lexical index and the built-in embedder share it so that a query and a
// chunk are always analysed the same way.
//
// A text is analysed in a language (see Lang, and Detect to find it):
//
//   - words are runs of letters, digits and marks; a compound joined by a
//     hyphen, underscore or dot ("read-only", "asn1_create_element",
//     "pkix.asn") and a word with inner capitals or digits ("camelCase",
//     "covid19") give their parts and, as an alternative form, the joined
//     word, so "read-only", "read only" and "readonly" all find each other;
//   - Chinese, Japanese, Korean (and the other scripts written without
//     spaces: Thai, Lao, Khmer, Myanmar) are split into overlapping character
//     bigrams, the standard segmentation-free indexing of CJK text (Lucene's
//     CJKAnalyzer does the same; Kwok, "Comparing representations in
//     Chinese information retrieval", SIGIR 1997, found bigrams about as
//     effective as segmented words);
//   - words are lower-cased, stop words of the language dropped, and the
//     rest reduced to their Snowball stem (Arabic: normalised and light
//     stemmed, see arabic.go), then accents folded (see fold.go).
package analysis

// Version names the rules of this package. Anything that stores analysed
// terms (index snapshots) or features of them (the built-in embedder's
// model name) records it, and must bump its own version when this one
// changes: terms analysed by two sets of rules do not match.
const Version = "2"

// maxTermLen bounds a term so that a run of junk (a base64 blob, a hash)
// cannot blow up postings or the stemmer; real words are far shorter.
const maxTermLen = 40

// Term is one analysed term.
type Term struct {
	Text string
	// Alt marks another form of the terms before it: a compound's joined
	// form. It matches like any term but takes no position of its own,
	// so it is neither paired with its neighbours nor counted in a text's
	// length.
	Alt bool
}

// Analyzed is what analysis made of a text: the language it was analysed
// in and its terms, as Analyze gives them. It lets a text analysed once
// on its way to one use (the built-in embedder's vector) be handed to
// another (the lexical index) rather than analysed again; see AnalyzeUnder.
type Analyzed struct {
	Lang  Lang
	Terms []Term
}

// AnalyzeUnder analyses text under a head (a document's name; none when
// empty): the language is the one detected in head and text together,
// separated by a line break, and the terms are text's alone, in that
// language. It is the analysis the lexical index makes of a chunk's text,
// and the one it takes instead when handed one.
func AnalyzeUnder(head, text string) Analyzed {
	whole := text
	if head != "" {
		whole = head + "\n" + text
	}
	lang, _ := Detect(whole)
	a := Analyzed{Lang: lang, Terms: []Term{}}
	Analyze(text, lang, func(t Term) { a.Terms = append(a.Terms, t) })
	return a
}

// Analyze calls fn with every term of text in order, analysed by lang's
// rules.
func Analyze(text string, lang Lang, fn func(Term)) {
	a := analyzer{lang: lang, fn: fn}
	a.run(text)
}

// AnalyzeQuery is Analyze for a query matched against text analysed in
// lang: the terms are lang's, so that each word matches what lang made of
// the same word in a chunk, and the stop words of the languages in
// alsoStop are dropped as well. Those are the languages the query is
// likely written in: a function word of the query's own language is no
// evidence about a chunk in another ("die" in a German query says nothing
// about English chunks on dying), and in a chunk analysed in a language
// it is not a stop word of, it is a rare, and so heavily weighted, term.
func AnalyzeQuery(text string, lang Lang, alsoStop []Lang, fn func(Term)) {
	a := analyzer{lang: lang, alsoStop: alsoStop, fn: fn}
	a.run(text)
}

// TermsIn returns the terms of text analysed by lang's rules, alternative
// forms included.
func TermsIn(text string, lang Lang) []string {
	var terms []string
	Analyze(text, lang, func(t Term) { terms = append(terms, t.Text) })
	return terms
}

// Words calls fn with every word of text before stop words and stemming:
// lower-cased and folded, compounds split into their parts, and each run of
// a script written without spaces whole.
func Words(text string, fn func(string)) {
	a := analyzer{lang: Neutral, words: fn}
	a.run(text)
}

// AnalyzeWords is Analyze(text, lang, fn) and Words(text, words), in one
// pass where the words are split alike: in every language but those that
// elide articles onto the next word ("l'homme"), which Words keeps whole.
func AnalyzeWords(text string, lang Lang, fn func(Term), words func(string)) {
	if elisions[lang] != nil {
		Analyze(text, lang, fn)
		Words(text, words)
		return
	}
	a := analyzer{lang: lang, fn: fn, words: words}
	a.run(text)
}

// AnalyzeQueryIn is AnalyzeQuery against a vocabulary: known says in how
// many texts a term occurs. A word of the query whose term occurs in
// none is also given as the terms of the compound parts it splits into
// (see compound.go), as alternative forms, so "Steuererklärungsfrist"
// finds "Frist für die Steuererklärung" and "filesystem" finds "file
// system"; and two words in a row that the vocabulary holds as one
// compound are also given as that compound, so "Steuererklärung Frist"
// finds "Steuererklärungsfrist".
func AnalyzeQueryIn(text string, lang Lang, alsoStop []Lang, known func(term string) int, fn func(Term)) {
	a := analyzer{lang: lang, alsoStop: alsoStop, known: known, fn: fn}
	a.run(text)
}

// analyzer is one pass over a text.
type analyzer struct {
	lang     Lang
	alsoStop []Lang                // more languages whose stop words are dropped
	known    func(term string) int // set: split and join compounds (AnalyzeQueryIn)
	prev     string                // the word before, for joinCompound; "" after a stop word
	fn       func(Term)
	words    func(string) // set: report words (Words), instead of terms unless fn is set too

	segs  []string // the current compound's segments
	parts []string // and their parts
}

// word analyses one word (a compound's part or joined form) and emits its
// term, unless it is a stop word. In a query analysed with a vocabulary
// (AnalyzeQueryIn), a word the vocabulary does not hold is followed by
// the terms of the parts it is a compound of (see compound.go).
func (a *analyzer) word(w string, alt, plain bool) bool {
	var t string
	if plain {
		t = a.termOfPlain(w)
	} else {
		w = compose(w)
		t = a.termOf(w, stem)
	}
	if t == "" {
		return false
	}
	a.fn(Term{Text: t, Alt: alt})
	if a.known != nil && a.known(t) == 0 {
		for _, p := range a.splitCompound(w) {
			a.fn(Term{Text: p, Alt: true})
		}
	}
	return true
}

// termOf returns the term of the composed word w, or "" for a stop word
// or none at all; stemFn stems.
func (a *analyzer) termOf(w string, stemFn func(Lang, string) string) string {
	if w == "" || len(w) > maxTermLen {
		return ""
	}
	var t string
	switch {
	case isArabicScript(w):
		w = arabicNormalize(w)
		if (a.lang == Arabic || a.stops(Arabic)) && isStop(Arabic, w) {
			return ""
		}
		t = w
		if a.lang == Arabic {
			t = stemFn(Arabic, w)
		}
	default:
		if isStop(a.lang, w) {
			return ""
		}
		for _, l := range a.alsoStop {
			if l != a.lang && isStop(l, w) {
				return ""
			}
		}
		t = w
		if foldFirst[a.lang] && foldable(t) {
			t = fold(t)
		}
		if !hasDigit(t) && a.lang != Arabic {
			t = stemFn(a.lang, t)
		}
		if foldable(t) {
			t = fold(t)
		}
	}
	return t
}

// termOfPlain is termOf for a word of lower-case ASCII letters, which
// composing already gives, which is not Arabic script, holds no digit and
// folds to itself.
func (a *analyzer) termOfPlain(w string) string {
	if len(w) > maxTermLen || isStop(a.lang, w) {
		return ""
	}
	for _, l := range a.alsoStop {
		if l != a.lang && isStop(l, w) {
			return ""
		}
	}
	if a.lang == Arabic {
		return w
	}
	t := stem(a.lang, w)
	if foldable(t) {
		t = fold(t)
	}
	return t
}

// stops reports whether lang is among a.alsoStop.
func (a *analyzer) stops(lang Lang) bool {
	for _, l := range a.alsoStop {
		if l == lang {
			return true
		}
	}
	return false
}
