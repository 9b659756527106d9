package index

import (
	"fmt"
	"math"
	"testing"
)

// groupedEntries gives vecs entries from id 0, each its own document whose
// metadata "group" is its index modulo groups, so that the filter
// groupIs(g) allows 1/groups of them.
func groupedEntries(vecs [][]float32, groups int) []Entry {
	es := entries(vecs, 0)
	for i := range es {
		es[i].Doc = &Document{ID: fmt.Sprintf("doc_%d", i), Metadata: map[string]string{"group": fmt.Sprint(i % groups)}}
	}
	return es
}

func groupIn(groups ...int) Filter {
	want := map[string]bool{}
	for _, g := range groups {
		want[fmt.Sprint(g)] = true
	}
	return func(d *Document) bool { return want[d.Metadata["group"]] }
}

// BenchmarkFilteredVectorSearch times the two ways of a filtered vector
// search, at several owner sizes and filter selectivities, for the
// candidate pool a hybrid query asks for: the exact scan of the allowed
// slots and the graph walk that keeps only allowed nodes. filterScanMax is
// set from where they cross. The filter's resolution into slots is timed
// apart (resolve).
func BenchmarkFilteredVectorSearch(b *testing.B) {
	const dim, k = 384, minCandidates
	for _, n := range []int{5000, 20000, 100000} {
		vecs := benchVectors(n+100, dim)
		x := testOpts.New("m", dim)
		x.graphFrom = 0
		must(b, x.Add(groupedEntries(vecs[:n], 1000)...))
		v := x.current.Load()
		queries := vecs[n:]
		for _, permille := range []int{1, 10, 20, 50, 100, 200, 500} {
			groups := make([]int, permille)
			for i := range groups {
				groups[i] = i
			}
			a := v.allow(groupIn(groups...), math.MaxInt)
			if a.count == 0 {
				b.Fatal("empty filter")
			}
			name := fmt.Sprintf("n=%d/allowed=%d", n, a.count)
			b.Run(name+"/resolve", func(b *testing.B) {
				f := groupIn(groups...)
				for b.Loop() {
					v.allow(f, filterScanMax).release()
				}
			})
			b.Run(name+"/scan", func(b *testing.B) {
				i := 0
				for b.Loop() {
					v.scanAllowed(queries[i%len(queries)], k, a)
					i++
				}
			})
			b.Run(name+"/graph", func(b *testing.B) {
				i := 0
				for b.Loop() {
					v.gen.graph.searchWithin(v, queries[i%len(queries)], k, 0, a.set)
					i++
				}
			})
		}
	}
}

// BenchmarkFilteredSearchKept times a hybrid search filtered to 1% of an
// owner's chunks whose filter is new to the index (resolved by asking
// every document and slot) beside the same search with a filter the index
// kept from the one before (see allowcache.go), and a search unfiltered.
func BenchmarkFilteredSearchKept(b *testing.B) {
	const n, dim = 200000, 32
	vecs := benchVectors(n+100, dim)
	x := testOpts.New("m", dim)
	es := groupedEntries(vecs[:n], 100)
	for i := range es {
		es[i].Text = fmt.Sprintf("walrus report %d", i%1000)
	}
	must(b, x.Add(es...))
	queries := vecs[n:]
	search := func(b *testing.B, filter Filter, key string) {
		i := 0
		for b.Loop() {
			x.Search(Query{Vector: queries[i%len(queries)], Text: "walrus report", K: 10, Filter: filter, FilterKey: key})
			i++
		}
	}
	b.Run("unfiltered", func(b *testing.B) { search(b, nil, "") })
	b.Run("new", func(b *testing.B) { search(b, groupIn(7), "") })
	b.Run("kept", func(b *testing.B) { search(b, groupIn(7), "group 7") })
}
