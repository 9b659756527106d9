package analysis

import (
	"fmt"
	"slices"
	"testing"
)

// cached reports whether cs's cache of lang holds w.
func (cs *stemCaches) cached(lang Lang, w string) bool {
	c := &cs.langs[lang]
	c.mu.Lock()
	defer c.mu.Unlock()
	in := func(m map[string]string) bool { _, ok := m[w]; return ok }
	hot := c.hot.Load()
	return hot != nil && in(*hot) || in(c.fresh) || in(c.older[0]) || in(c.older[1])
}

// TestStemCacheFollowsTheWordsInUse checks that a full stem cache keeps
// the words stemmed lately, and those used again, in place of the first
// ones it met, and that a stem from the cache is the stemmer's.
func TestStemCacheFollowsTheWordsInUse(t *testing.T) {
	cs := &stemCaches{max: 8} // generations of 4 words
	check := func(w string) {
		t.Helper()
		if got, want := cs.stem(English, w), stemUncached(English, w); got != want {
			t.Fatalf("stem(%q) = %q, the stemmer's is %q", w, got, want)
		}
	}
	for _, w := range []string{"running", "houses", "cities", "walked"} {
		check(w)
	}
	check("jumping") // a generation begins; the first four stay in the older
	check("running") // used again: kept in the recent generation
	for _, w := range []string{"singing", "happily", "dancing"} {
		check(w)
	}
	check("stories") // another generation: houses, cities and walked go
	var in, out []string
	for _, w := range []string{"running", "houses", "cities", "walked", "jumping", "singing", "happily", "dancing", "stories"} {
		if cs.cached(English, w) {
			in = append(in, w)
		} else {
			out = append(out, w)
		}
	}
	if want := []string{"running", "jumping", "singing", "happily", "dancing", "stories"}; !slices.Equal(in, want) {
		t.Errorf("cached %q, want %q (not cached: %q)", in, want, out)
	}
	// Many more words than fit, each twice: stems stay the stemmer's
	// through every change of generation.
	for i := range 100 {
		w := fmt.Sprintf("walkings%c%c", 'a'+i%26, 'a'+i/26)
		check(w)
		check(w)
	}
}

// TestStemCacheConcurrent stems the same words from several goroutines
// through a cache small enough to change generations and hot maps all the
// while: every stem is still the stemmer's (and the race detector, which
// make test runs, sees the unlocked reads).
func TestStemCacheConcurrent(t *testing.T) {
	cs := &stemCaches{max: 64}
	words := make([]string, 200)
	for i := range words {
		words[i] = fmt.Sprintf("walkings%c%c", 'a'+i%26, 'a'+i/26)
	}
	errs := make(chan string, 4)
	for g := range 4 {
		go func() {
			for i := range 2000 {
				w := words[(i*(g+1))%len(words)]
				if got, want := cs.stem(English, w), stemUncached(English, w); got != want {
					errs <- fmt.Sprintf("stem(%q) = %q, the stemmer's is %q", w, got, want)
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
}
