package analysis

import (
	"strings"
	"sync"

	"github.com/blevesearch/snowballstem"
)

// stemCacheMax bounds each language's stem cache. A language's working
// vocabulary is far smaller; past the bound, new words are stemmed every
// time.
const stemCacheMax = 1 << 19

// stems caches stem: a stemmer allocates per call, and the same few
// thousand words make up most of any text.
var stems struct {
	sync.RWMutex
	m [NumLangs]map[string]string
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
	s, ok := stems.m[lang][w]
	stems.RUnlock()
	if ok {
		return s
	}
	s = stemUncached(lang, w)
	stems.Lock()
	if stems.m[lang] == nil {
		stems.m[lang] = make(map[string]string)
	}
	if len(stems.m[lang]) < stemCacheMax {
		stems.m[lang][strings.Clone(w)] = s
	}
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
