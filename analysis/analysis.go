// Package analysis turns text into the terms that search compares: lower-case
// words and numbers, English stop words dropped, each reduced to its Snowball
// stem. The lexical index and the built-in embedder share it so that a query
// and a chunk are always cut the same way.
package analysis

import (
	"strings"
	"sync"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// maxTermLen bounds a term so that a run of junk (a base64 blob, a hash)
// cannot blow up postings or the stemmer; real words are far shorter.
const maxTermLen = 40

// Terms returns the stemmed terms of text in order, stop words removed.
func Terms(text string) []string {
	var terms []string
	Words(text, func(w string) {
		if english.IsStopWord(w) {
			return
		}
		terms = append(terms, Stem(w))
	})
	return terms
}

// stemCacheMax bounds the stem cache. A language's working vocabulary is
// far smaller; past the bound, new words are stemmed every time.
const stemCacheMax = 1 << 20

// stems caches Stem: the stemmer allocates per call, and the same few
// thousand words make up most of any text.
var stems struct {
	sync.RWMutex
	m map[string]string
}

// Stem reduces one lower-case word to its Snowball English stem. Numbers and
// words with digits are kept as they are: stemming "2nd" or "x86" only hurts.
func Stem(w string) string {
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return w
		}
	}
	stems.RLock()
	s, ok := stems.m[w]
	stems.RUnlock()
	if ok {
		return s
	}
	s = english.Stem(w, false)
	stems.Lock()
	if stems.m == nil {
		stems.m = make(map[string]string)
	}
	if len(stems.m) < stemCacheMax {
		stems.m[strings.Clone(w)] = s
	}
	stems.Unlock()
	return s
}

// Words calls fn with every lower-case word of text: runs of letters and
// digits. Apostrophes inside a word are dropped ("don't" → "dont") so that
// the same word spelled with a straight or curly quote matches.
func Words(text string, fn func(string)) {
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 && b.Len() <= maxTermLen {
			fn(b.String())
		}
		b.Reset()
	}
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		case r == '\'' || r == '’':
			// inside a word: skip; elsewhere it is a separator, and
			// skipping it there changes nothing either.
		default:
			flush()
		}
	}
	flush()
}
