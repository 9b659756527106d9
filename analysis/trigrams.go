package analysis

import (
	"cmp"
	"slices"
	"sync"
	"unicode"
	_ "unsafe" // for go:linkname, below

	"github.com/abadojack/whatlanggo"
)

// whatlanggo scores a text against a language by looking each of the
// language's 300 profile trigrams up in a map of the text's: for the
// 26 Latin-script languages detection allows, 7,800 look-ups
// whatever the text's length. That was 70% of detecting a five-word
// query (0.12 ms, a tenth of a query's CPU at a million chunks) and of
// the passages the plain-English test leaves to the trigrams. Turned
// around, the same distances cost one look-up per trigram of the text:
// every profile trigram the text lacks counts maxTrigramDistance, so a
// language's distance is that times its profile's length, less what each
// trigram the text shares with the profile saves. scriptProfiles.score
// does that over whatlanggo's own profiles and answers exactly what
// whatlanggo.DetectWithOptions does (TestTrigramsAgree holds it to that,
// confidence bit for bit, on every language's test set).
//
// The profiles are not exported, so they are linked to by name; a
// whatlanggo that renamed them would fail to build, not detect wrongly.

//go:linkname latinProfiles github.com/abadojack/whatlanggo.latinLangs
var latinProfiles map[whatlanggo.Lang][]string

//go:linkname cyrillicProfiles github.com/abadojack/whatlanggo.cyrillicLangs
var cyrillicProfiles map[whatlanggo.Lang][]string

//go:linkname arabicProfiles github.com/abadojack/whatlanggo.arabicLangs
var arabicProfiles map[whatlanggo.Lang][]string

//go:linkname devanagariProfiles github.com/abadojack/whatlanggo.devanagariLangs
var devanagariProfiles map[whatlanggo.Lang][]string

//go:linkname ethiopicProfiles github.com/abadojack/whatlanggo.ethiopicLangs
var ethiopicProfiles map[whatlanggo.Lang][]string

//go:linkname hebrewProfiles github.com/abadojack/whatlanggo.hebrewLangs
var hebrewProfiles map[whatlanggo.Lang][]string

// whatlanggo's distances (its constants.go): a trigram missing from the
// text, and the most a language can be from it (a profile of 300).
const (
	maxTrigramDistance = 300
	maxTotalDistance   = 90000
)

type trigram [3]rune

// profileEntry is a trigram's place in one language's profile.
type profileEntry struct {
	lang int32 // index into scriptProfiles.langs
	pos  int32
}

// scriptProfiles are the allowed languages of one script, their profiles
// inverted: for each trigram, the languages whose profile has it, where.
type scriptProfiles struct {
	langs   []whatlanggo.Lang // by number, so that ties go the same way every time
	missing []int             // a language's distance from a text with none of its trigrams
	entries map[trigram][]profileEntry
}

// trigramProfiles are the scripts whatlanggo tells languages apart in by
// trigrams; text in any other script is the one language that owns it.
var trigramProfiles = sync.OnceValue(func() map[*unicode.RangeTable]*scriptProfiles {
	invert := func(profiles map[whatlanggo.Lang][]string) *scriptProfiles {
		p := &scriptProfiles{entries: make(map[trigram][]profileEntry)}
		for lang := range profiles {
			if detectOptions.Whitelist[lang] {
				p.langs = append(p.langs, lang)
			}
		}
		slices.Sort(p.langs)
		for i, lang := range p.langs {
			p.missing = append(p.missing, maxTrigramDistance*len(profiles[lang]))
			for pos, s := range profiles[lang] {
				var t trigram
				n := 0
				for _, r := range s {
					if n < len(t) {
						t[n] = r
					}
					n++
				}
				if n != len(t) {
					// whatlanggo's text trigrams are three runes each:
					// this one could never match, and costs its distance.
					continue
				}
				p.entries[t] = append(p.entries[t], profileEntry{int32(i), int32(pos)})
			}
		}
		return p
	}
	return map[*unicode.RangeTable]*scriptProfiles{
		unicode.Latin:      invert(latinProfiles),
		unicode.Cyrillic:   invert(cyrillicProfiles),
		unicode.Arabic:     invert(arabicProfiles),
		unicode.Devanagari: invert(devanagariProfiles),
		unicode.Ethiopic:   invert(ethiopicProfiles),
		unicode.Hebrew:     invert(hebrewProfiles),
	}
})

// detectWhatlang is whatlanggo.DetectWithOptions(text, detectOptions),
// with the trigrams scored by scriptProfiles.score.
func detectWhatlang(text string) whatlanggo.Info {
	script := whatlanggo.DetectScript(text)
	p := trigramProfiles()[script]
	if p == nil {
		return whatlanggo.DetectWithOptions(text, detectOptions) // no trigrams: the script's one language
	}
	lang, confidence := p.score(text)
	return whatlanggo.Info{Lang: lang, Script: script, Confidence: confidence}
}

// trigramScratch is what one detection counts in, kept for the next.
type trigramScratch struct {
	counts map[trigram]int
	ranked []trigramCount
	dist   []int
}

type trigramCount struct {
	t     trigram
	count int
}

var trigramScratchPool = sync.Pool{New: func() any {
	return &trigramScratch{counts: make(map[trigram]int)}
}}

// score is whatlanggo's detectLangInProfiles and calculateConfidence for
// the languages of p.
func (p *scriptProfiles) score(text string) (whatlanggo.Lang, float64) {
	switch len(p.langs) {
	case 0:
		return -1, 0
	case 1:
		return p.langs[0], 1
	}
	s := trigramScratchPool.Get().(*trigramScratch)
	defer trigramScratchPool.Put(s)

	// The text's trigrams, ranked as whatlanggo ranks them: by count,
	// then (between equal counts) by the trigram itself, both descending.
	clear(s.counts)
	countTrigrams(text, s.counts)
	s.ranked = s.ranked[:0]
	for t, n := range s.counts {
		s.ranked = append(s.ranked, trigramCount{t, n})
	}
	slices.SortFunc(s.ranked, func(a, b trigramCount) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return slices.Compare(b.t[:], a.t[:])
	})

	s.dist = append(s.dist[:0], p.missing...)
	for rank, tc := range s.ranked {
		for _, e := range p.entries[tc.t] {
			s.dist[e.lang] -= maxTrigramDistance - abs(rank-int(e.pos))
		}
	}

	// The nearest language and the distance of the next; on a tie the
	// lower-numbered language, whose confidence is 0 either way.
	best, second := 0, -1
	for i := 1; i < len(s.dist); i++ {
		switch {
		case s.dist[i] < s.dist[best]:
			best, second = i, best
		case second < 0 || s.dist[i] < s.dist[second]:
			second = i
		}
	}
	score1 := maxTotalDistance - s.dist[best]
	score2 := maxTotalDistance - s.dist[second]
	switch {
	case score1 == 0:
		return -1, 0
	case score2 == 0:
		// whatlanggo divides as integers here: confidence is 0 or 1.
		return p.langs[best], float64(min(score1/500, 1))
	}
	rate := float64(score1-score2) / float64(score2)
	confidentRate := 12.0/float64(len(s.ranked)) + 0.05
	if rate > confidentRate {
		return p.langs[best], 1
	}
	return p.langs[best], rate / confidentRate
}

// countTrigrams counts the trigrams of text into counts as whatlanggo
// does: lower case, with punctuation, symbols and digits as spaces, the
// text between spaces, and no trigram of two spaces around a letter.
func countTrigrams(text string, counts map[trigram]int) {
	r1, r2 := ' ', rune(-1)
	add := func(r3 rune) {
		if !(r2 == ' ' && (r1 == ' ' || r3 == ' ')) {
			counts[trigram{r1, r2, r3}]++
		}
		r1, r2 = r2, r3
	}
	for _, r := range text {
		if unicode.IsSymbol(r) || unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsDigit(r) {
			r = ' '
		}
		r = unicode.ToLower(r)
		if r2 < 0 {
			r2 = r
			continue
		}
		add(r)
	}
	if r2 >= 0 {
		add(' ')
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
