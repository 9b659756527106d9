package analysis

import (
	"fmt"
	"slices"
	"testing"
)

// cached reports whether lang's stem cache holds w.
func cached(lang Lang, w string) bool {
	stems.RLock()
	defer stems.RUnlock()
	_, recent := stems.recent[lang][w]
	_, older := stems.older[lang][w]
	return recent || older
}

// withStemCache runs the test with an empty stem cache of max words, and
// empties it again after.
func withStemCache(t *testing.T, max int) {
	t.Helper()
	empty := func() {
		stems.Lock()
		stems.recent, stems.older = [NumLangs]map[string]string{}, [NumLangs]map[string]string{}
		stems.Unlock()
	}
	was := stemCacheMax
	stemCacheMax = max
	empty()
	t.Cleanup(func() {
		stemCacheMax = was
		empty()
	})
}

// TestStemCacheFollowsTheWordsInUse checks that a full stem cache keeps
// the words stemmed lately, and those used again, in place of the first
// ones it met, and that a stem from the cache is the stemmer's.
func TestStemCacheFollowsTheWordsInUse(t *testing.T) {
	withStemCache(t, 8) // generations of 4 words
	check := func(w string) {
		t.Helper()
		if got, want := stem(English, w), stemUncached(English, w); got != want {
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
		if cached(English, w) {
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
