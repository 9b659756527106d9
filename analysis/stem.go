package analysis

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/snowballstem"
)

// stemCacheMax bounds each language's stem cache: two generations of up
// to half as many words each. When the recent one is full, the older is
// dropped and a new one begun; a word found in the older moves to the
// recent. So the cache holds the words in use: a server's owners can
// hold more words than fit (a million chunks of real text, with its names
// and typos, can alone), and a cache that kept the first words it met for
// good stemmed each later one at every occurrence, taking the cache's
// lock to find it full (a passage took 3.3 times as long to analyse,
// BenchmarkAnalyzePassageAfterVocabulary, and an extractive answer 2.5).
const stemCacheMax = 1 << 19

// stems caches stem: a stemmer allocates per call, and the same few
// thousand words make up most of any text.
var stems = stemCaches{max: stemCacheMax}

// stemCaches is a stem cache for each language, each bounded by max
// words (tests make small ones).
type stemCaches struct {
	max   int
	langs [NumLangs]stemCache
}

// stemCache is one language's stems. Most words are found in hot, a map
// never written once published, read without a lock: every upload and
// query analyses its text through this cache, and a read lock shared by all
// of them (two atomic writes to one word a lookup) let two processors
// analyse passages 1.6 times as fast as one, not twice: a passage every 1.87
// µs on two against 2.97 on one (BenchmarkAnalyzePassageParallel and
// BenchmarkAnalyzePassage), 1.55 with hot. The words stemmed since hot
// was made wait in fresh, under the lock, until there are enough of them
// to make a new hot with.
type stemCache struct {
	hot atomic.Pointer[map[string]string]
	// The lock on a cache line of its own: taking it would otherwise
	// take hot's line from the processors reading it.
	_ [64]byte

	mu sync.Mutex
	// The recent generation is hot and fresh; the older one was.
	fresh map[string]string
	older [2]map[string]string
	_     [64]byte // and apart from the next language's hot
}

// stem reduces a lower-case word to its stem in lang: its Snowball stem,
// or its light stem for Arabic (whose words must be Arabic script); a
// language with no stemmer leaves it as it is.
func stem(lang Lang, w string) string { return stems.stem(lang, w) }

// stem is stem through cs.
func (cs *stemCaches) stem(lang Lang, w string) string {
	var stemmer func(*snowballstem.Env) bool
	if lang < NumLangs {
		stemmer = snowball[lang]
	}
	if stemmer == nil && lang != Arabic {
		return w
	}
	c := &cs.langs[lang]
	if hot := c.hot.Load(); hot != nil {
		if s, ok := (*hot)[w]; ok {
			return s
		}
	}
	c.mu.Lock()
	s, fresh := c.fresh[w]
	older := false
	if !fresh {
		if s, older = c.older[0][w]; !older {
			s, older = c.older[1][w]
		}
	}
	c.mu.Unlock()
	if fresh {
		return s
	}
	if !older {
		s = stemUncached(lang, w)
	}
	c.mu.Lock()
	c.add(w, s, cs.max)
	c.mu.Unlock()
	return s
}

// add puts w's stem s in the recent generation, beginning a new one when
// it is full (of max/2 words), and makes a new hot map when fresh holds more than a
// quarter as many words as the current one (so that the copies cost
// about five a word). c.mu is held.
func (c *stemCache) add(w, s string, max int) {
	hot := c.hot.Load()
	if hot == nil {
		hot = new(map[string]string)
	}
	if _, ok := (*hot)[w]; ok {
		return // added while it was stemmed
	}
	if _, ok := c.fresh[w]; ok {
		return
	}
	if len(*hot)+len(c.fresh) >= max/2 {
		c.older = [2]map[string]string{*hot, c.fresh}
		hot, c.fresh = new(map[string]string), nil
		c.hot.Store(nil)
	}
	if c.fresh == nil {
		c.fresh = make(map[string]string)
	}
	c.fresh[strings.Clone(w)] = s
	if len(c.fresh) <= len(*hot)/4 {
		return
	}
	m := make(map[string]string, len(*hot)+len(c.fresh))
	for w, s := range *hot {
		m[w] = s
	}
	for w, s := range c.fresh {
		m[w] = s
	}
	c.hot.Store(&m)
	c.fresh = nil
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
