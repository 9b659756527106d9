package analysis

import (
	"math"
	"unicode"
)

// Compounds written as one word. German (and Dutch, the Nordic languages,
// and English now and then: "readonly", "filesystem") joins words into
// one, so a query's "Steuererklärungsfrist" shares no term with a text
// that says "Frist für die Steuererklärung". A word of a query that the
// owner's texts never use is split into parts they do use, without a
// dictionary, by the corpus-frequency method of Koehn and Knight
// ("Empirical methods for compound splitting", EACL 2003): of all the
// ways to write the word as known parts, the one whose parts' frequencies
// have the highest geometric mean, with German's linking "s" and "es"
// allowed between parts as the paper allows them. A word the texts hold
// is never split: the method keeps it whole whenever it is frequent, and
// only an unknown word is sure to gain.
const (
	// minCompoundPart is the shortest part, in letters: shorter pieces
	// are affixes and linking letters far more often than words, and
	// as parts they would match text by chance.
	minCompoundPart = 3
	// maxCompoundParts bounds the parts of one word; it keeps the search
	// small, and compounds of more parts are rare in queries.
	maxCompoundParts = 3
)

// linkingElements are the letters a language may put between the parts
// of a compound, which belong to neither part.
var linkingElements = [NumLangs][]string{
	German: {"s", "es"},
}

// splitCompound returns the terms of the parts w splits into, or nil.
// w is composed (lower case). Only words of letters in scripts written
// with spaces between words are split.
func (a *analyzer) splitCompound(w string) []string {
	runes := []rune(w)
	if len(runes) < 2*minCompoundPart {
		return nil
	}
	for _, r := range runes {
		if !unicode.IsLetter(r) || !unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic) {
			return nil
		}
	}
	s := compoundSearch{a: a, runes: runes, memo: map[string]string{}, bests: map[int]split{}}
	parts, _ := s.best(0, maxCompoundParts)
	if len(parts) < 2 {
		return nil
	}
	return parts
}

// compoundSearch finds the best split of runes.
type compoundSearch struct {
	a     *analyzer
	runes []rune
	memo  map[string]string // part -> its term, "" for none
	bests map[int]split     // from*(maxCompoundParts+1)+maxParts -> best
}

type split struct {
	parts []string
	score float64
}

// term returns the term of the part runes[i:j] when the texts hold it.
func (s *compoundSearch) term(i, j int) (string, int) {
	part := string(s.runes[i:j])
	t, ok := s.memo[part]
	if !ok {
		t = s.a.termOf(part, stemUncached)
		s.memo[part] = t
	}
	if t == "" {
		return "", 0
	}
	return t, s.a.known(t)
}

// best returns the parts of runes[from:] (at most maxParts) with the
// highest mean log frequency, and that mean; nil when there is no split
// into known parts.
func (s *compoundSearch) best(from, maxParts int) ([]string, float64) {
	key := from*(maxCompoundParts+1) + maxParts
	if b, ok := s.bests[key]; ok {
		return b.parts, b.score
	}
	parts, score := s.search(from, maxParts)
	s.bests[key] = split{parts, score}
	return parts, score
}

func (s *compoundSearch) search(from, maxParts int) ([]string, float64) {
	var parts []string
	score := math.Inf(-1)
	n := len(s.runes)
	if t, df := s.term(from, n); df > 0 && n-from >= minCompoundPart {
		parts, score = []string{t}, math.Log(float64(df))
	}
	if maxParts < 2 {
		return parts, score
	}
	for split := from + minCompoundPart; split <= n-minCompoundPart; split++ {
		head, df := s.term(from, split)
		if df == 0 {
			continue
		}
		for _, rest := range s.rests(split) {
			tail, tailScore := s.best(rest, maxParts-1)
			if tail == nil {
				continue
			}
			k := float64(len(tail))
			mean := (math.Log(float64(df)) + tailScore*k) / (k + 1)
			if mean > score {
				parts, score = append([]string{head}, tail...), mean
			}
		}
	}
	return parts, score
}

// rests returns where the next part may start after a part ending at end:
// there, or after a linking element of the language.
func (s *compoundSearch) rests(end int) []int {
	out := []int{end}
	for _, link := range linkingElements[s.a.lang] {
		l := []rune(link)
		if end+len(l) <= len(s.runes)-minCompoundPart && string(s.runes[end:end+len(l)]) == link {
			out = append(out, end+len(l))
		}
	}
	return out
}

// closedCompounds are the languages whose spelling rules write compounds
// as one word: there a query's two words ("Steuererklärung Frist") are
// what a text writes as one. English writes most compounds open, so a
// joined form there is a rarer variant spelling ("life cycle",
// "lifecycle"), which, counted beside the two words it joins, would
// outweigh them.
var closedCompounds = [NumLangs]bool{
	German: true, Dutch: true, Swedish: true, Danish: true, Norwegian: true,
	Finnish: true, Hungarian: true,
}

// joinCompound gives the compound that the words first and second make,
// as an alternative form, when the language writes compounds closed and
// the vocabulary holds it: the inverse of splitCompound, on the same
// evidence, for the query that writes apart what the texts write as one
// word. Joined with a linking element of the language when the texts
// hold that form instead.
func (a *analyzer) joinCompound(first, second string) {
	if !closedCompounds[a.lang] {
		return
	}
	first, second = compose(first), compose(second)
	for _, w := range []string{first, second} {
		for _, r := range w {
			if !unicode.IsLetter(r) || !unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic) {
				return
			}
		}
	}
	for _, link := range append([]string{""}, linkingElements[a.lang]...) {
		if t := a.termOf(first+link+second, stemUncached); t != "" && a.known(t) > 0 {
			a.fn(Term{Text: t, Alt: true})
			return
		}
	}
}
