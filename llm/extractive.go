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

	// maxExtractSentenceRunes bounds one quoted sentence; longer ones are cut
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
	nq := int32(len(terms.of(query, nil)))
	if nq == 0 {
		return NoMatchAnswer
	}
	// Cut and analyse every sentence once; a source's terms are the union of
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
	df := make([]int, nq)
	inSource := make([]bool, nq)
	for i := range sources {
		clear(inSource)
		for j, sent := range bySource[i] {
			start := len(buf)
			buf = terms.of(sent, buf)
			for _, t := range buf[start:] {
				if t < nq && !inSource[t] {
					inSource[t] = true
					df[t]++
				}
			}
			words := strings.Count(sent, " ") + 1
			totalWords += words
			all = append(all, sentence{source: i, pos: j, text: sent, words: words, terms: buf[start:len(buf):len(buf)]})
		}
	}
	idf := make([]float64, nq)
	for t := range idf {
		idf[t] = bm25IDF(len(sources), df[t])
	}

	avgWords := float64(totalWords) / float64(max(len(all), 1))
	cands := make([]extractCandidate, 0, len(all))
	for _, sent := range all {
		matched := 0.0
		for _, t := range sent.terms {
			if t >= nq {
				break // ascending: the rest are not the query's
			}
			matched += idf[t]
		}
		if matched == 0 {
			continue
		}
		weight := 1 - rankDecay*float64(min(sent.source, 10))
		// A long run of text (a table flattened into one "sentence")
		// matches many terms by chance; without a penalty it would beat the
		// short sentence that answers. Only longer than average sentences
		// pay, by the square root, so covering more of the query still wins.
		weight /= math.Sqrt(max(1, float64(sent.words)/avgWords))
		// Fragments ("Installation.") match a term by being a heading,
		// not by saying anything; halve them.
		if len(sent.terms) < 3 {
			weight *= 0.5
		}
		cands = append(cands, extractCandidate{source: sent.source, pos: sent.pos, text: sent.text,
			terms: sent.terms, weight: weight, score: weight * matched})
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
// cut by the same rules. The source's language is the one the index cut
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
// ascending order.
func (a *answerTerms) of(text string, buf []int32) []int32 {
	start := len(buf)
	a.buf = buf
	analysis.Analyze(text, a.lang, a.add)
	buf, a.buf = a.buf, nil
	slices.Sort(buf[start:])
	return buf[:start+len(slices.Compact(buf[start:]))]
}

// bm25IDF weights a term found in df of n sources, in the BM25 form: rare
// terms weigh more, and the weight stays positive even for a term every
// source has, so that it still counts.
func bm25IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
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
// starts a little before the first word matching a query term, cut at word
// boundaries and marked with "…" where text was dropped.
func clipSentence(s string, isQueryTerm func(string) bool, lang analysis.Lang) string {
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
		if ts := analysis.TermsIn(string(runes[i:j]), lang); len(ts) == 1 && isQueryTerm(ts[0]) {
			hit = i
			break
		}
		i = j
	}
	start := max(0, hit-maxExtractSentenceRunes/4)
	end := min(len(runes), start+maxExtractSentenceRunes)
	start = max(0, end-maxExtractSentenceRunes)
	// Move inward to word boundaries.
	for start > 0 && start < end && !unicode.IsSpace(runes[start-1]) {
		start++
	}
	for end < len(runes) && end > start && !unicode.IsSpace(runes[end]) {
		end--
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

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’'
}

// splitAfterCitations cuts an answer into pieces that each end with a
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

// sentenceAbbreviations end with a period that does not end a sentence. Lower-case,
// without the period. Single letters (initials) are handled separately.
var sentenceAbbreviations = map[string]bool{
	"e.g": true, "i.e": true, "vs": true, "cf": true, "mr": true,
	"mrs": true, "ms": true, "dr": true, "prof": true, "st": true, "no": true,
	"fig": true, "figs": true, "vol": true, "p": true, "pp": true, "ch": true,
	"sec": true, "approx": true, "inc": true, "ltd": true, "jr": true, "sr": true,
	"eq": true, "ref": true, "al": true,
}

// splitSentences cuts text into sentences: at blank lines and bullet lines
// (structure a PDF or Markdown text keeps), and after ., ! or ? followed by
// a space and a word that does not start in lower case, unless the period
// belongs to a known abbreviation, an initial or a list number. Whitespace
// inside a sentence is collapsed, so PDF line breaks disappear.
func splitSentences(text string) []string {
	var out []string
	for _, block := range splitBlocks(text) {
		out = append(out, splitBlock(block)...)
	}
	return out
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

func splitBlock(block string) []string {
	words := strings.Fields(block)
	var out []string
	start := 0
	for i, w := range words {
		if i+1 == len(words) || !endsSentence(w, i-start) {
			continue
		}
		if next, _ := utf8.DecodeRuneInString(words[i+1]); unicode.IsLower(next) {
			continue
		}
		out = append(out, strings.Join(words[start:i+1], " "))
		start = i + 1
	}
	if start < len(words) {
		out = append(out, strings.Join(words[start:], " "))
	}
	return out
}

// endsSentence reports whether word w, the index-th word of the sentence so
// far, closes it.
func endsSentence(w string, index int) bool {
	// Most words end in a letter: no closing mark or stop to look past.
	if last := w[len(w)-1]; last < utf8.RuneSelf && !strings.ContainsRune(")]\"'.!?", rune(last)) {
		return false
	}
	core := strings.TrimRight(w, ")]\"'”’»")
	if core == "" {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(core)
	switch last {
	case '!', '?':
		return true
	case '.':
	default:
		return false
	}
	stem := strings.ToLower(strings.TrimRight(core, "."))
	stem = strings.TrimLeft(stem, "([\"'“‘«")
	if sentenceAbbreviations[stem] {
		return false
	}
	if utf8.RuneCountInString(stem) == 1 && unicode.IsLetter([]rune(stem)[0]) {
		return false // an initial: "J. Smith"
	}
	if index == 0 && isListNumber(stem) {
		return false // a list number: "1. Install it"
	}
	return true
}

func isListNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
