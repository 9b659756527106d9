package llm

import (
	"context"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/analysis"
)

// ExtractiveModel is the answer_model reported for answers built from the
// sources' own sentences.
const ExtractiveModel = "extractive"

const (
	// maxExtractSentences bounds the answer: one sentence usually answers a
	// lookup question, a second or third covers query terms the first missed.
	maxExtractSentences = 3

	// maxExtractAnswerRunes bounds the whole answer so that a source made of
	// one endless "sentence" (a table, a code listing) cannot flood it.
	maxExtractAnswerRunes = 700

	// maxExtractSentenceRunes bounds one quoted sentence; longer ones are truncated
	// to a window around their first matching term.
	maxExtractSentenceRunes = 320

	// minFollowShare is how much of the best sentence's score a further
	// sentence must earn (in new query terms) to be added: below it the
	// extra sentence is mostly noise.
	minFollowShare = 0.5

	// rankDecay favours earlier sources slightly: retrieval already ranked
	// them, so between two equally matching sentences the higher-ranked
	// source's one wins.
	rankDecay = 0.04
)

const (
	// NoSourcesAnswer is the extractive answer when retrieval found nothing.
	NoSourcesAnswer = "Nothing relevant was found in the indexed documents."

	// NoMatchAnswer is the extractive answer when sources were found (by
	// meaning) but none of their sentences shares a word with the query.
	NoMatchAnswer = "The documents found do not mention the words of the question; see the returned chunks for the closest passages."
)

// NewExtractive returns the answerer that needs no model: it quotes the
// sentences of the sources that best match the query, each followed by its
// [n] citation. It is deterministic, instant and always available, which is
// why it is the fallback whenever a chat model is not.
func NewExtractive() Answerer { return extractive{} }

type extractive struct{}

func (extractive) Model() string { return ExtractiveModel }

// extractCandidate is one sentence of one source, with its terms.
type extractCandidate struct {
	source int // 0-based index into sources
	pos    int // sentence position within the source
	text   string
	terms  []int32 // numbered by answerTerms, ascending
	weight float64 // multiplies matched idf: rank, length and fragment factors
	score  float64
}

// Answer picks sentences greedily: the best-scoring first, then those that
// add query terms not yet covered, up to maxExtractSentences and
// maxExtractAnswerRunes. Scores weight each query term by an idf computed over
// the sources themselves, so a term every source shares counts for little.
func (extractive) Answer(ctx context.Context, query string, sources []Source, onDelta func(string)) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	answer := extractAnswer(query, sources)
	if onDelta != nil {
		// One delta per cited sentence, so a streaming client sees the same
		// shape of events as with a model.
		for _, piece := range splitAfterCitations(answer) {
			onDelta(piece)
		}
	}
	return answer, nil
}

func extractAnswer(query string, sources []Source) string {
	if len(sources) == 0 {
		return NoSourcesAnswer
	}
	terms := newAnswerTerms(answerLanguage(query, sources))
	// The query's terms are numbered first: a sentence's terms below nq
	// are the ones it shares with the query.
	nq := int32(len(terms.of(query, nil, queryStopLangs(query, sources)...)))
	if nq == 0 {
		return NoMatchAnswer
	}
	// Split into sentences and analyse each once; a source's terms are the union of
	// its sentences', which gives the document frequencies for idf.
	type sentence struct {
		source, pos int
		text        string
		terms       []int32
		words       int
	}
	// Sized up front: growing them was a third of what an answer allocated.
	bySource := make([][]string, len(sources))
	sentences, textBytes := 0, 0
	for i, s := range sources {
		bySource[i] = splitSentences(s.Text)
		sentences += len(bySource[i])
		textBytes += len(s.Text)
	}
	all := make([]sentence, 0, sentences)
	// Every sentence's terms, one after another: about a term a word, of
	// some six bytes each with its space.
	buf := make([]int32, 0, textBytes/6)
	totalWords := 0
	for i := range sources {
		for j, sent := range bySource[i] {
			sent = dropFootnoteMarks(sent)
			start := len(buf)
			buf = terms.of(sent, buf)
			words := strings.Count(sent, " ") + 1
			totalWords += words
			all = append(all, sentence{source: i, pos: j, text: sent, words: words, terms: buf[start:len(buf):len(buf)]})
		}
	}
	avgWords := float64(totalWords) / float64(max(len(all), 1))
	candidates := func() ([]extractCandidate, []float64) {
		df := make([]int, nq)
		inSource := make([]bool, nq)
		for k, sent := range all {
			if k == 0 || sent.source != all[k-1].source {
				clear(inSource)
			}
			for _, t := range sent.terms {
				if t >= nq {
					break // ascending: the rest are not the query's
				}
				if !inSource[t] {
					inSource[t] = true
					df[t]++
				}
			}
		}
		idf := make([]float64, nq)
		for t := range idf {
			idf[t] = bm25IDF(len(sources), df[t])
		}
		cands := make([]extractCandidate, 0, len(all))
		for _, sent := range all {
			matched := 0.0
			for _, t := range sent.terms {
				if t >= nq {
					break
				}
				matched += idf[t]
			}
			if matched == 0 {
				continue
			}
			weight := 1 - rankDecay*float64(min(sent.source, 10))
			// A long run of text (a table flattened into one "sentence")
			// matches many terms by chance; without a penalty it would beat
			// the short sentence that answers. Only longer than average
			// sentences pay, by the square root, so covering more of the
			// query still wins.
			weight /= math.Sqrt(max(1, float64(sent.words)/avgWords))
			// Fragments ("Installation.") match a term by being a heading,
			// not by saying anything; halve them.
			if len(sent.terms) < 3 {
				weight *= 0.5
			}
			cands = append(cands, extractCandidate{source: sent.source, pos: sent.pos, text: sent.text,
				terms: sent.terms, weight: weight, score: weight * matched})
		}
		return cands, idf
	}
	cands, idf := candidates()
	if len(cands) == 0 {
		// No sentence has a term of the query, yet retrieval found these
		// sources: by a word inside a compound, often ("Versicherung" in
		// "Lebensversicherung"), which a term of its own does not show.
		// A sentence with a word that holds a query term counts as having
		// that term; only now, as such a match is weaker than a word's.
		queryTerms := make([]string, nq)
		for term, id := range terms.ids {
			if id < nq {
				queryTerms[id] = term
			}
		}
		for k := range all {
			all[k].terms = withInnerMatches(all[k].text, queryTerms, all[k].terms)
		}
		cands, idf = candidates()
	}
	if len(cands) == 0 {
		return NoMatchAnswer
	}
	sort.SliceStable(cands, func(a, b int) bool {
		if cands[a].score != cands[b].score {
			return cands[a].score > cands[b].score
		}
		if cands[a].source != cands[b].source {
			return cands[a].source < cands[b].source
		}
		return cands[a].pos < cands[b].pos
	})

	isQueryTerm := func(term string) bool {
		id, ok := terms.ids[term]
		return ok && id < nq
	}
	picked := []extractCandidate{cands[0]}
	covered := make([]bool, nq) // the query's terms the picked sentences have
	cover := func(c extractCandidate) {
		for _, t := range c.terms {
			if t >= nq {
				break
			}
			covered[t] = true
		}
	}
	cover(cands[0])
	length := utf8.RuneCountInString(clipSentence(cands[0].text, isQueryTerm, terms.lang))
	best := cands[0].score
	for len(picked) < maxExtractSentences {
		next, gain := -1, 0.0
		for k, c := range cands {
			if c.score == 0 || nearDuplicate(c, picked) {
				continue
			}
			g := 0.0
			for _, t := range c.terms {
				if t >= nq {
					break
				}
				if !covered[t] {
					g += c.weight * idf[t]
				}
			}
			// A sentence that only restates covered terms stays below the
			// bar; among those adding terms, one that also matches the
			// covered ones is more likely on topic.
			g += 0.25 * c.score
			if g > gain {
				next, gain = k, g
			}
		}
		if next < 0 || gain < minFollowShare*best {
			break
		}
		c := cands[next]
		cands[next].score = 0 // never pick twice
		n := utf8.RuneCountInString(clipSentence(c.text, isQueryTerm, terms.lang))
		if length+n > maxExtractAnswerRunes {
			break
		}
		length += n
		picked = append(picked, c)
		cover(c)
	}

	parts := make([]string, len(picked))
	for k, c := range picked {
		parts[k] = clipSentence(c.text, isQueryTerm, terms.lang) + " [" + strconv.Itoa(c.source+1) + "]"
	}
	return strings.Join(parts, " ")
}

// answerLanguage is the language the query and its sources are compared
// in: the query's own when detection is sure of it, otherwise the first
// source's (a chunk is long enough to tell), so that every word of both is
// analysed by the same rules. The source's language is the one the index analysed
// it in, when it came from there: a retrieved chunk is seldom in
// detection's memo, and detecting one outside plain English took 0.36 ms
// of an answer's 0.48 from five German passages
// (BenchmarkExtractiveSourceLanguage), for every query too short to tell
// its own language.
func answerLanguage(query string, sources []Source) analysis.Lang {
	if lang, sure := analysis.Detect(query); sure {
		return lang
	}
	if sources[0].Lang != analysis.Neutral {
		return sources[0].Lang
	}
	lang, _ := analysis.Detect(sources[0].Text)
	return lang
}

// answerTerms numbers the terms of one answer's query and sources, in the
// order they are first met, so that a sentence's terms are a short list
// of numbers: an answer analyses every sentence of its sources, and a map
// of terms for each was a third of its time.
type answerTerms struct {
	lang analysis.Lang
	ids  map[string]int32
	// add appends a term's number to buf. It is made once: a closure
	// made for each sentence cost two allocations (itself, and the buf
	// it captured), a quarter of what an answer allocated.
	add func(analysis.Term)
	buf []int32
}

func newAnswerTerms(lang analysis.Lang) *answerTerms {
	a := &answerTerms{lang: lang, ids: make(map[string]int32)}
	a.add = func(t analysis.Term) {
		id, ok := a.ids[t.Text]
		if !ok {
			id = int32(len(a.ids))
			a.ids[t.Text] = id
		}
		a.buf = append(a.buf, id)
	}
	return a
}

// of appends to buf the numbers of the terms of text, each once and in
// ascending order, dropping the stop words of the languages in alsoStop
// as well as those of the answer's (for the query: see queryStopLangs).
func (a *answerTerms) of(text string, buf []int32, alsoStop ...analysis.Lang) []int32 {
	start := len(buf)
	a.buf = buf
	analysis.AnalyzeQuery(text, a.lang, alsoStop, a.add)
	buf, a.buf = a.buf, nil
	slices.Sort(buf[start:])
	return buf[:start+len(slices.Compact(buf[start:]))]
}

// queryStopLangs are the languages whose stop words a query drops, as
// search drops them (index.view.queryTerms): the query's own when
// detection is sure of it, and the language most of the sources are in.
// A query too short to tell its language is analysed in the first source's
// (answerLanguage); if that source is Japanese among English ones, "the"
// in "the password" would otherwise be a word of the question.
func queryStopLangs(query string, sources []Source) []analysis.Lang {
	var count [analysis.NumLangs]int
	most := analysis.Neutral
	for _, s := range sources {
		if s.Lang < analysis.NumLangs {
			if count[s.Lang]++; count[s.Lang] > count[most] {
				most = s.Lang
			}
		}
	}
	langs := []analysis.Lang{most}
	if l, sure := analysis.Detect(query); sure && l != most {
		langs = append(langs, l)
	}
	return langs
}

// bm25IDF weights a term found in df of n sources, in the BM25 form: rare
// terms weigh more, and the weight stays positive even for a term every
// source has, so that it still counts.
func bm25IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// minInnerMatchRunes is the shortest query term withInnerMatches looks for
// inside a word: shorter ones ("art", "ion") are inside too many words by
// chance.
const minInnerMatchRunes = 5

// withInnerMatches returns terms, the ascending term numbers of the
// sentence text, with the numbers of the query terms (queryTerms[n] is the
// term numbered n) found inside a longer word of text added in front.
// terms holds no query term (those are below len(queryTerms)), so the
// result stays ascending.
func withInnerMatches(text string, queryTerms []string, terms []int32) []int32 {
	var found []int32
	analysis.Words(text, func(w string) {
		for n, q := range queryTerms {
			if utf8.RuneCountInString(q) >= minInnerMatchRunes && len(w) > len(q) &&
				strings.Contains(w, q) && !slices.Contains(found, int32(n)) {
				found = append(found, int32(n))
			}
		}
	})
	if len(found) == 0 {
		return terms
	}
	slices.Sort(found)
	return append(found, terms...)
}

// dropFootnoteMarks removes the footnote marks a quoted sentence carries
// from its source where they follow punctuation ("…the capital of
// Germany,[12] and…", "…in 2023.[3][4]"): in an answer they would read as
// citations of sources that the answer does not have. A bracketed number
// anywhere else is content and stays: a reference ("as shown in [12]"),
// an index ("a[0]", "f(x)[1]"), a shell's job ("[1] 25647").
func dropFootnoteMarks(s string) string {
	if !strings.Contains(s, "]") {
		return s
	}
	var b strings.Builder
	prev := ' '
	for i := 0; i < len(s); {
		if n := footnoteMarkLen(s[i:]); n > 0 && strings.ContainsRune(".,;:!?\"”’", prev) {
			i += n
			continue // prev stays: a mark may follow a mark
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		prev = r
		i += size
	}
	return b.String()
}

// footnoteMarkLen is the length of the mark "[n]" (n of one to three
// digits, not starting with 0) that s begins with, or 0.
func footnoteMarkLen(s string) int {
	if len(s) < 3 || s[0] != '[' || s[1] < '1' || s[1] > '9' {
		return 0
	}
	for i := 2; i < len(s) && i <= 4; i++ {
		switch {
		case s[i] == ']':
			return i + 1
		case s[i] < '0' || s[i] > '9':
			return 0
		}
	}
	return 0
}

// nearDuplicate reports whether c says what an already picked sentence says:
// overlapping chunks repeat sentences, and quoting one twice wastes the answer.
func nearDuplicate(c extractCandidate, picked []extractCandidate) bool {
	for _, p := range picked {
		if c.text == p.text {
			return true
		}
		inter := 0
		for i, j := 0, 0; i < len(c.terms) && j < len(p.terms); {
			switch {
			case c.terms[i] < p.terms[j]:
				i++
			case c.terms[i] > p.terms[j]:
				j++
			default:
				inter++
				i, j = i+1, j+1
			}
		}
		union := len(c.terms) + len(p.terms) - inter
		if union > 0 && float64(inter)/float64(union) >= 0.8 {
			return true
		}
	}
	return false
}

// clipSentence bounds s to maxExtractSentenceRunes, keeping a window that
// starts a little before the first word matching a query term, trimmed at word
// boundaries and marked with "…" where text was dropped. In a sentence
// over the bound, words too long to read (see shortenLongWords) are
// shortened first.
func clipSentence(s string, isQueryTerm func(string) bool, lang analysis.Lang) string {
	if utf8.RuneCountInString(s) <= maxExtractSentenceRunes {
		return s // whole, a checksum or a URL in it too
	}
	s = shortenLongWords(s)
	runes := []rune(s)
	if len(runes) <= maxExtractSentenceRunes {
		return s
	}
	// Find the rune offset of the first matching word.
	hit := 0
	for i := 0; i < len(runes); {
		if !isWordRune(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && isWordRune(runes[j]) {
			j++
		}
		if k := wordHit(runes[i:j], isQueryTerm, lang); k >= 0 {
			hit = i + k
			break
		}
		i = j
	}
	start := max(0, hit-maxExtractSentenceRunes/4)
	end := min(len(runes), start+maxExtractSentenceRunes)
	start = max(0, end-maxExtractSentenceRunes)
	// Move inward to word boundaries, unless there is none near: text
	// written without spaces (Chinese, Thai) is truncated where the window ends.
	if start > 0 {
		k := start
		for k < end && k-start < maxWordRunes && !unicode.IsSpace(runes[k-1]) {
			k++
		}
		if k < end && unicode.IsSpace(runes[k-1]) {
			start = k
		}
	}
	if end < len(runes) {
		k := end
		for k > start && end-k < maxWordRunes && !unicode.IsSpace(runes[k]) {
			k--
		}
		if k > start && unicode.IsSpace(runes[k]) {
			end = k
		}
	}
	out := strings.TrimSpace(string(runes[start:end]))
	if start > 0 {
		out = "…" + out
	}
	if end < len(runes) {
		out += "…"
	}
	return out
}

// wordHit is the offset in the word w of a query term: 0 when w's terms
// hold one, else -1. A run of text written without spaces (Chinese,
// Japanese, Thai), a "word" that may be a whole sentence, is searched
// for the character pair that is the term.
func wordHit(w []rune, isQueryTerm func(string) bool, lang analysis.Lang) int {
	if analysis.Spaced(string(w[:1])) {
		if slices.ContainsFunc(analysis.TermsIn(string(w), lang), isQueryTerm) {
			return 0
		}
		return -1
	}
	for k := 0; k+1 < len(w); k++ {
		if slices.ContainsFunc(analysis.TermsIn(string(w[k:k+2]), lang), isQueryTerm) {
			return k
		}
	}
	return -1
}

// maxWordRunes is the longest word a quote keeps whole. Longer ones, in
// a script written with spaces, are base64, hashes, hex dumps and long
// URLs: a quote shows their beginning (shortWordRunes) and "…", so that
// one does not fill the quote in place of the words around it.
const (
	maxWordRunes   = 40
	shortWordRunes = 24
)

// shortenLongWords shortens the words of s over maxWordRunes (see there).
func shortenLongWords(s string) string {
	if len(s) <= maxWordRunes {
		return s
	}
	long := func(w string) bool {
		return len(w) > maxWordRunes && utf8.RuneCountInString(w) > maxWordRunes && analysis.Spaced(w)
	}
	words := strings.Split(s, " ")
	if !slices.ContainsFunc(words, long) {
		return s
	}
	for i, w := range words {
		if long(w) {
			words[i] = string([]rune(w)[:shortWordRunes]) + "…"
		}
	}
	return strings.Join(words, " ")
}

// isWordRune reports the runes of words: letters, digits and the marks
// that combine with letters (the vowel signs of Devanagari and other
// Indic scripts, accents written apart), and apostrophes.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '\'' || r == '’'
}

// splitAfterCitations splits an answer into pieces that each end with a
// citation (and the space after it), so that their concatenation is the
// answer itself.
func splitAfterCitations(answer string) []string {
	var pieces []string
	for {
		i := strings.Index(answer, "] ")
		if i < 0 {
			break
		}
		pieces = append(pieces, answer[:i+2])
		answer = answer[i+2:]
	}
	if answer != "" {
		pieces = append(pieces, answer)
	}
	return pieces
}

// splitSentences splits text into sentences: at blank lines and bullet lines
// (structure a PDF or Markdown text keeps), and where analysis.Sentences
// ends one, as chunking does. Whitespace inside a sentence is collapsed, so
// PDF line breaks disappear.
func splitSentences(text string) []string {
	var out []string
	for _, block := range splitBlocks(text) {
		analysis.Sentences(block, func(start, end int) {
			out = append(out, collapseSpaces(block[start:end]))
		})
	}
	return out
}

// collapseSpaces joins the words of s, which has no space at either end,
// by one space each: s itself when they are already.
func collapseSpaces(s string) string {
	prev := false
	for _, r := range s {
		space := r == ' ' || r < utf8.RuneSelf && '\t' <= r && r <= '\r' || r >= utf8.RuneSelf && unicode.IsSpace(r)
		if space && (r != ' ' || prev) {
			return strings.Join(strings.Fields(s), " ")
		}
		prev = space
	}
	return s
}

// splitBlocks separates paragraphs and list items.
func splitBlocks(text string) []string {
	var blocks []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, " "))
			cur = cur[:0]
		}
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			flush()
			continue
		case isBulletLine(trimmed):
			flush()
		}
		cur = append(cur, trimmed)
	}
	flush()
	return blocks
}

func isBulletLine(s string) bool {
	for _, p := range []string{"- ", "* ", "• ", "– "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
