package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeptFiltersFollowChanges: a filtered search that names its filter
// (FilterKey) finds what the same search without a name finds, while
// documents come (new ones, and new chunks of old ones), chunks go, the
// index is compacted, and an older version is searched after a newer one
// kept its set; both with the allowed chunks scanned and walked.
func TestKeptFiltersFollowChanges(t *testing.T) {
	const dim, groups = 16, 10
	vecs := testVectors(4000, dim, 21)
	for _, way := range []struct {
		name    string
		scanMax int
	}{{"scan", math.MaxInt}, {"graph walk", 0}} {
		t.Run(way.name, func(t *testing.T) {
			x := testOpts.New("m", dim)
			x.graphFrom, x.scanAllowedMax = 0, way.scanMax
			rng := rand.New(rand.NewPCG(7, 7))
			docs := map[int]*Document{} // by number
			var live []uint64
			next := uint64(0)
			add := func(n int) {
				es := make([]Entry, n)
				for i := range es {
					// One in four joins a document that has chunks already.
					d := int(next)
					if len(docs) > 0 && rng.IntN(4) == 0 {
						d = rng.IntN(int(next))
					}
					if docs[d] == nil {
						docs[d] = &Document{ID: fmt.Sprintf("doc_%d", d), Metadata: map[string]string{"group": fmt.Sprint(d % groups)}}
					}
					es[i] = Entry{ID: next, Vector: vecs[next], Text: fmt.Sprintf("walrus note %d", next), Doc: docs[d]}
					live = append(live, next)
					next++
				}
				must(t, x.Add(es...))
			}
			remove := func(n int) {
				rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
				x.Delete(live[:n]...)
				live = live[n:]
			}
			key := "group 3"
			check := func(step string, at Version) {
				t.Helper()
				for _, q := range []Query{
					{Vector: vecs[3990], Text: "walrus note", K: 10},
					{Vector: vecs[3991], K: 10},
					{Text: "walrus", K: 10},
				} {
					q.Filter, q.At = groupIn(3), at
					want := x.Search(q)
					q.FilterKey = key
					got := x.Search(q)
					if !slices.Equal(got, want) {
						t.Fatalf("%s: kept filter found %v, the filter itself %v", step, got, want)
					}
					for _, h := range got {
						if !slices.Contains(live, h.ID) && at.v == nil {
							t.Fatalf("%s: hit %d was deleted", step, h.ID)
						}
					}
				}
			}
			add(500)
			check("first adds", Version{})
			for round := range 12 {
				old := x.Current()
				add(200)
				check(fmt.Sprintf("round %d: added", round), Version{})
				check(fmt.Sprintf("round %d: an older version after a newer", round), old)
				remove(60)
				check(fmt.Sprintf("round %d: deleted", round), Version{})
				// The filter's best chunks go, and a key new to the index
				// is resolved on the next version: its set, without them,
				// must not be taken for the version before, which still
				// holds them.
				before := x.Current()
				for _, q := range []Query{{Vector: vecs[3990], Text: "walrus note", K: 10}, {Vector: vecs[3991], K: 10}, {Text: "walrus", K: 10}} {
					q.Filter = groupIn(3)
					best := hitIDs(x.Search(q))
					x.Delete(best...)
					live = slices.DeleteFunc(live, func(id uint64) bool { return slices.Contains(best, id) })
				}
				key = fmt.Sprint("group 3, round ", round)
				check(fmt.Sprintf("round %d: the filter's best deleted", round), Version{})
				check(fmt.Sprintf("round %d: the version before that", round), before)
				key = "group 3"
				if round == 6 {
					gen := x.current.Load().gen
					remove(len(live) * 2 / 3) // past half deleted: a new generation
					if x.current.Load().gen == gen {
						t.Fatal("deleting two thirds did not compact the index")
					}
					check("compacted", Version{})
				}
			}
			x.filters.mu.Lock()
			e := x.filters.entries[key]
			x.filters.mu.Unlock()
			if v := x.current.Load(); e == nil || e.gen.Value() != v.gen || e.n != v.n {
				t.Fatalf("no set kept for the current version")
			}
		})
	}
}

// TestKeptFiltersAreBounded: at most maxKeptFilters sets are kept, the
// least recently used going first.
func TestKeptFiltersAreBounded(t *testing.T) {
	x := testOpts.New("m", 2)
	must(t, x.Add(Entry{ID: 1, Vector: []float32{1, 0}, Text: "walrus", Doc: &Document{ID: "doc_a", Metadata: map[string]string{"group": "1"}}}))
	search := func(key string) { x.Search(Query{Text: "walrus", K: 1, Filter: groupIn(1), FilterKey: key}) }
	for i := range maxKeptFilters {
		search(fmt.Sprint(i))
	}
	search("0") // used again: now the most recent
	search("new")
	x.filters.mu.Lock()
	defer x.filters.mu.Unlock()
	if len(x.filters.entries) != maxKeptFilters || x.filters.entries["0"] == nil || x.filters.entries["1"] != nil || x.filters.entries["new"] == nil {
		keys := make([]string, 0, len(x.filters.entries))
		for k := range x.filters.entries {
			keys = append(keys, k)
		}
		t.Fatalf("kept %v; want %d, without 1, the least recently used", keys, maxKeptFilters)
	}
}

// TestKeptFiltersConcurrent: searches that share kept sets while a writer
// adds and deletes find, on each version, what the filter itself finds
// there (and make test's race detector watches the sharing).
func TestKeptFiltersConcurrent(t *testing.T) {
	const dim = 16
	vecs := testVectors(3000, dim, 33)
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	must(t, x.Add(groupedEntries(vecs[:500], 10)...))
	done := make(chan struct{})
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				q := Query{Vector: vecs[2990+g], Text: "walrus", K: 10, Filter: groupIn(g), At: x.Current()}
				want := x.Search(q)
				q.FilterKey = fmt.Sprint("group ", g)
				if got := x.Search(q); !slices.Equal(got, want) {
					errs <- fmt.Errorf("search %d of group %d: kept filter found %v, the filter itself %v", i, g, got, want)
					return
				}
			}
		}()
	}
	for b := 1; b < 12; b++ {
		es := groupedEntries(vecs[b*200:(b+1)*200], 10)
		for i := range es {
			es[i].ID = uint64(b*200 + i)
			es[i].Text = "walrus"
		}
		must(t, x.Add(es...))
		x.Delete(uint64(b*37%500), uint64(b*200+5))
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
