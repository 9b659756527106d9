package analysis

import (
	"strings"
	"sync"

	"github.com/blevesearch/snowballstem"
)

// stemCacheMax bounds each language's stem cache: two generations of up
// to half as many words each. When the recent one is full, the older is
// dropped and a new one begun; a word found in the older moves to the
// recent. So the cache holds the words in use: a server's owners can
// hold more words than fit (a million chunks of real text, with its names
// and typos, can alone), and a cache that kept the first words it met for
// good stemmed each later one at every occurrence, taking the cache's
// lock to find it full (a passage took 3.3 times as long to cut,
// BenchmarkAnalyzePassageAfterVocabulary, and an extractive answer 2.5).
// A variable for tests.
var stemCacheMax = 1 << 19

// stems caches stem: a stemmer allocates per call, and the same few
// thousand words make up most of any text.
var stems struct {
	sync.RWMutex
	recent, older [NumLangs]map[string]string
}

// stem reduces a lower-case word to its stem in lang: its Snowball stem,
// or its light stem for Arabic (whose words must be Arabic script); a
// language with no stemmer leaves it as it is.
func stem(lang Lang, w string) string {
	var stemmer func(*snowballstem.Env) bool
	if lang < NumLangs {
		stemmer = snowball[lang]
	}
	if stemmer == nil && lang != Arabic {
		return w
	}
	stems.RLock()
	s, recent := stems.recent[lang][w]
	older := false
	if !recent {
		s, older = stems.older[lang][w]
	}
	stems.RUnlock()
	if recent {
		return s
	}
	if !older {
		s = stemUncached(lang, w)
	}
	stems.Lock()
	m := stems.recent[lang]
	if m == nil || len(m) >= stemCacheMax/2 {
		stems.older[lang], m = m, make(map[string]string)
		stems.recent[lang] = m
	}
	m[strings.Clone(w)] = s
	stems.Unlock()
	return s
}

// stemUncached is stem without the cache: for the candidate parts of a
// compound (compound.go), fragments that would only crowd real words out
// of it.
func stemUncached(lang Lang, w string) string {
	var stemmer func(*snowballstem.Env) bool
	if lang < NumLangs {
		stemmer = snowball[lang]
	}
	switch {
	case lang == Arabic:
		return arabicLightStem(w)
	case stemmer == nil:
		return w
	}
	env := snowballstem.NewEnv(w)
	stemmer(env)
	return env.Current()
}
