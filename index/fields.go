package index

import (
	"github.com/docsift/docsift/analysis"
)

// Fields. A chunk is searched as two fields scored together with BM25F
// (Robertson, Zaragoza & Taylor, "Simple BM25 extension to multiple
// weighted fields", CIKM 2004): its text (the body) and its head, the
// document's name and the chunk's title (Entry.Name, Entry.Title: the
// document's title and its section headings), which say in a few words
// what the chunk is about. Each field's term frequency is
// normalised by that field's own length, weighted, and only the sum is
// saturated, so a word in both name and text counts more than in either,
// but never as two independent matches.
//
// Head terms are stored as terms of their own, behind headPrefix; a byte
// that analysis never produces, so they never collide with body terms.
const headPrefix = "\x02"

// BM25F field parameters.
const (
	// headWeight is the head's weight against the body's 1: the value
	// the BM25F paper uses to explain the model ("a title weight of two
	// is mapped to ... the title content repeated twice"), taken as is,
	// not tuned on any of docsift's test sets.
	headWeight = 2.0
	// headB is the head's length normalisation: the classic BM25
	// default (Robertson et al., Okapi at TREC-3), so a word of a
	// two-word name counts more than one of a twelve-word title. The
	// body keeps bm25B.
	headB = 0.75
)

// langMask is a set of analysis.Lang, one bit each.
type langMask uint32

// Every analysis.Lang has a bit.
var _ [32 - analysis.NumLangs]struct{}

func (m langMask) has(l analysis.Lang) bool { return m&(1<<l) != 0 }

// lexStats are the totals BM25F and query analysis need beyond the body
// lengths: the head lengths, and how many live entries each language has.
type lexStats struct {
	headLen uint64
	langs   [analysis.NumLangs]int32
}

func (s *lexStats) add(lang analysis.Lang, headLen uint32, sign int) {
	s.headLen += uint64(int64(sign) * int64(headLen))
	s.langs[lang] += int32(sign)
}

// present is the set of languages with live entries.
func (s *lexStats) present() langMask {
	var m langMask
	for l, n := range s.langs {
		if n > 0 {
			m |= 1 << l
		}
	}
	return m
}

// count is the number of live entries in the languages of m.
func (s *lexStats) count(m langMask) int {
	n := 0
	for l, c := range s.langs {
		if m.has(analysis.Lang(l)) {
			n += int(c)
		}
	}
	return n
}

// dominant is the language of the most live entries (the first of a tie).
func (s *lexStats) dominant() analysis.Lang {
	best := analysis.Neutral
	for l, n := range s.langs {
		if n > s.langs[best] {
			best = analysis.Lang(l)
		}
	}
	return best
}

// slotLang is the language slot s's text was analysed in.
func (ps pages) slotLang(s uint32) analysis.Lang {
	p, off := pageOf(s)
	return analysis.Lang(ps[p].lang[off])
}

func (ps pages) headLen(s uint32) uint32 {
	p, off := pageOf(s)
	return ps[p].headLen[off]
}

// setLex records how slot s's text was analysed: its language and the
// length of its head.
func (g *generation) setLex(s uint32, lang analysis.Lang, headLen uint32) {
	p, off := pageOf(s)
	g.pages[p].lang[off] = uint8(lang)
	g.pages[p].headLen[off] = headLen
	g.langs.add(s, lang)
}

// langSlots lists, for each language few of a generation's slots were
// analysed in, those slots in order. A term of one language's analysis
// counts only in that language's docs, and an owner of one main language
// usually has a few docs that detection put in others; their lists let a
// search skip those docs in a long posting list by a search each
// (see view.bodyRuns) rather than ask every posting its language. Lists
// are views' to read: the writer only appends past a published length.
type langSlots struct {
	slots [analysis.NumLangs][]uint32
	many  langMask // languages past listedLangMax slots, no longer listed
}

// listedLangMax is the most slots a language is listed with: beyond it
// the language is a main one of the owner, and its docs are too many to
// skip one by one.
const listedLangMax = 1 << 16

func (l *langSlots) add(s uint32, lang analysis.Lang) {
	switch {
	case l.many.has(lang):
	case len(l.slots[lang]) == listedLangMax:
		l.slots[lang] = nil
		l.many |= 1 << lang
	default:
		l.slots[lang] = append(l.slots[lang], s)
	}
}

// analyse turns an entry into its fields' terms: the language of its name
// and text is detected, and text, name and title are all analysed by that
// language's rules, as the query will be for this entry (see queryTerms).
// The name goes first, as in the text embedders are given (ingest's
// entryText), so that a built-in embedding of the same chunk finds its
// language already detected. An entry handed its Analyzed takes its
// language and text's terms from it.
func (c *termCounter) analyse(e Entry) analysed {
	body := docTerms{}
	var lang analysis.Lang
	if e.Analyzed != nil {
		lang = e.Analyzed.Lang
		for _, t := range e.Analyzed.Terms {
			body.add(t)
		}
	} else {
		// analysis.AnalyzeUnder(e.Name, e.Text), without its slice.
		lang, _ = analysis.Detect(langText(e))
		analysis.Analyze(e.Text, lang, body.add)
	}
	head := docTerms{prefix: headPrefix, keys: body.keys}
	analysis.Analyze(e.Name, lang, head.add)
	if e.Title != e.Name {
		head.prev = "" // no pair across the name and the title
		analysis.Analyze(e.Title, lang, head.add)
	}
	return analysed{Entry: e, counts: count(&c.keys, head.keys), length: body.length, lang: lang, headLen: head.length}
}

// langText is what an entry's language is detected in.
func langText(e Entry) string {
	if e.Name == "" {
		return e.Text
	}
	return e.Name + "\n" + e.Text
}

// queryTerm is one term of a query: the languages whose analysis of the
// query gave it, and how often.
type queryTerm struct {
	term  string
	tf    uint32
	langs langMask
}

// docFreq is the number of v's entries holding term in their text or head
// (an entry with both counts twice, deleted ones until compaction: the
// vocabulary that query words are split into compound parts by, which
// needs to know which terms occur and roughly how often, no more).
func (v *view) docFreq(term string) int {
	a, b := v.gen.lex.postings(term, v.n)
	c, d := v.gen.lex.postings(headPrefix+term, v.n)
	return len(a) + len(b) + len(c) + len(d)
}

// queryTerms analyses a query once for every language the view's entries
// were analysed in, so that each entry is matched by the query analysed
// exactly as its own text was: a word the query shares with a chunk
// matches it, whatever language detection makes of a three-word query. The stop words
// of the languages the query is likely written in are dropped from every
// analysis: its own when detection is sure of it, and the owner's dominant
// language's. A word no entry holds is also matched by the compound parts
// it splits into (analysis.AnalyzeQueryIn), in the languages of at least
// 1/minorLanguage of the entries and in the query's likely one. Terms
// that several languages agree on (most of them) are kept once, with the
// set of those languages.
func (v *view) queryTerms(text string) []queryTerm {
	present := v.lex.present()
	if present == 0 {
		return nil
	}
	stop := []analysis.Lang{v.lex.dominant()}
	guess, sure := analysis.Detect(text)
	if sure && guess != stop[0] {
		stop = append(stop, guess)
	}
	type key struct {
		term string
		tf   uint32
	}
	var out []queryTerm
	at := map[key]int{}
	var c termCounter
	var f pairing
	known := v.docFreq
	for l := range analysis.NumLangs {
		if !present.has(l) {
			continue
		}
		f = pairing{terms: f.terms[:0]}
		// Compound parts and joined words are looked for only in the
		// languages of a share of the docs, and in the one detection
		// guesses for the query (a German question to the few German
		// manuals of an English owner): each language's search costs as
		// much as the dominant one's, and a few docs that detection put
		// in other languages (usual in a large owner) would multiply a
		// query's analysis for their sake.
		vocab := known
		if l != guess && int(v.lex.langs[l])*minorLanguage < v.live {
			vocab = nil
		}
		analysis.AnalyzeQueryIn(text, l, stop, vocab, f.add)
		counts := count(&c.terms, f.terms)
		for _, tc := range counts {
			k := key{tc.of, tc.tf}
			if i, ok := at[k]; ok {
				out[i].langs |= 1 << l
				continue
			}
			at[k] = len(out)
			out = append(out, queryTerm{term: tc.of, tf: tc.tf, langs: 1 << l})
		}
	}
	return out
}

// minorLanguage: a language of fewer than 1/minorLanguage of the docs,
// unless it is the query's likely one, has its docs matched by the
// query's words as analysed in it, but not by their compound parts or
// joined forms (see queryTerms).
const minorLanguage = 100

// Language is the language most of the index's entries are written in:
// the one to read a query in when the query is too short to tell.
func (x *OwnerIndex) Language() analysis.Lang {
	return x.current.Load().lex.dominant()
}
