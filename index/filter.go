package index

import (
	"cmp"
	"math/bits"
	"sync"
)

// Filtered search. A query's Filter is resolved against the documents of
// the version it searches into the set of slots it allows; both sides then
// search within that set, so a filter never costs results (a filter that
// allows 1% of an owner's chunks still yields K hits when 1% holds K):
//
//   - vectors: when the set is small, its slots are scanned (exact); when
//     it is large and the generation has a graph, the graph is searched
//     keeping only allowed nodes, while every node still routes the walk;
//   - BM25: scored as usual (IDF stays the owner's, so a filter does not
//     change a chunk's score), and the top taken among allowed docs only.
//
// filterScanMax is the largest allowed set that is scanned rather than
// searched through the graph. BenchmarkFilteredVectorSearch (384
// dimensions, the 100 candidates of a hybrid query, 2 cores) puts the
// crossover between 10,000 and 20,000 allowed slots: at 20,000 slots, 4,000
// allowed scan in 0.14 ms and walk the graph in 1.0 ms, 10,000 in 0.37 and
// 0.44 ms; at 100,000 slots, 10,000 allowed take 0.40 and 2.1 ms, 20,000
// 1.9 and 1.0 ms. A walk that keeps only allowed nodes visits about
// ef/selectivity of them (all of them when fewer than ef are allowed),
// while a scan costs one dot product per allowed slot; so the line sits a
// little below the crossover, where the scan is also exact.
const filterScanMax = 8192

// Version is one published version of an owner's index. A caller that
// reads something else alongside a search (the store's chunks) searches
// through Query.At and, when the two disagree, waits for Superseded and
// tries again on the newer version.
type Version struct {
	x *OwnerIndex
	v *view
}

// Current returns the version searches see now.
func (x *OwnerIndex) Current() Version { return Version{x: x, v: x.current.Load()} }

// Superseded is closed once a newer version of the index is published.
func (ver Version) Superseded() <-chan struct{} { return ver.v.superseded }

// viewOf is the version q searches on x.
func (q *Query) viewOf(x *OwnerIndex) *view {
	if q.At.v == nil {
		return x.current.Load()
	}
	if q.At.x != x {
		panic("index: Query.At is a version of another index")
	}
	return q.At.v
}

// slotSet is a set of slots as a bitmap.
type slotSet []uint64

func newSlotSet(n uint32) slotSet { return make(slotSet, (n+63)/64) }

func (b slotSet) add(s uint32) { b[s>>6] |= 1 << (s & 63) }

func (b slotSet) has(s uint32) bool { return b[s>>6]&(1<<(s&63)) != 0 }

// allowed is the set of slots a filter allows in a view.
type allowed struct {
	set   slotSet
	count int
	// slots lists the set in slot order when it is small enough to be
	// scanned (see filterScanMax); nil otherwise.
	slots []uint32
	// kept is set on a set kept for later searches (see allowcache.go),
	// which may hold slots deleted since.
	kept bool
}

var slotSetPool sync.Pool

// release returns the bitmap for reuse by the next filtered search.
func (a *allowed) release() {
	if a.kept {
		return
	}
	clear(a.set)
	slotSetPool.Put(&a.set)
}

// allow resolves f against v: each live document is asked once, then every
// live slot of an allowed document joins the set, which is listed when it
// has at most scanMax members.
func (v *view) allow(f Filter, scanMax int) *allowed {
	a := &allowed{}
	docs := newSlotSet(v.docs.n)
	any := false
	for p, left := 0, int(v.docs.n); left > 0; p++ {
		pg, first := v.docs.pages[p], uint32(int(v.docs.n)-left)
		used := min(left, pageSlots(p))
		for off, d := range pg.docs[:used] {
			if dead := pg.deadAt[off].Load(); (dead == 0 || dead > v.epoch) && f(d) {
				docs.add(first + uint32(off))
				any = true
			}
		}
		left -= used
	}
	words := int(v.n+63) / 64
	if p, _ := slotSetPool.Get().(*slotSet); p != nil && cap(*p) >= words {
		a.set = (*p)[:words]
	} else {
		a.set = make(slotSet, words)
	}
	if !any {
		return a
	}
	left := int(v.n)
	for p := 0; left > 0; p++ {
		pg := v.pages[p]
		used := min(left, pageSlots(p))
		first := uint32(int(v.n) - left)
		for off, ref := range pg.doc[:used] {
			if ref == 0 || !docs.has(ref-1) {
				continue
			}
			s := first + uint32(off)
			if v.dead > 0 && !v.alive(s) {
				continue
			}
			a.set.add(s)
			a.count++
			if a.count <= scanMax {
				a.slots = append(a.slots, s)
			}
		}
		left -= used
	}
	if a.count > scanMax {
		a.slots = nil
	}
	return a
}

// searchVectorsAllowed is searchVectors within a (nil: every slot).
func (v *view) searchVectorsAllowed(q []float32, k, ef int, a *allowed) []scored {
	switch {
	case a == nil:
		return v.searchVectors(q, k, ef)
	case a.slots != nil || v.gen.graph == nil:
		return v.scanAllowed(q, k, a)
	}
	return v.gen.graph.searchWithin(v, q, k, ef, a.set)
}

// scanAllowed is the search over a's slots: by their codes, then the best
// candidates re-scored exactly, as in scan.
func (v *view) scanAllowed(q []float32, k int, a *allowed) []scored {
	if k <= 0 || a.count == 0 {
		return nil
	}
	qc := code{make([]int8, len(q)), 0}
	qc.scale = quantise(qc.c, q)
	top := newTopK(max(2*k, rescoreMin))
	// A kept set may hold slots deleted since it was resolved.
	stale := a.kept && v.dead > 0
	if a.slots != nil {
		for _, s := range a.slots {
			if !stale || v.alive(s) {
				top.push(s, v.pages.approx(qc, s))
			}
		}
		return rescore(v.pages, q, top.heap, k)
	}
	for w, word := range a.set {
		for word != 0 {
			s := uint32(w*64 + bits.TrailingZeros64(word))
			word &= word - 1
			if !stale || v.alive(s) {
				top.push(s, v.pages.approx(qc, s))
			}
		}
	}
	return rescore(v.pages, q, top.heap, k)
}

// topAllowed is top among the docs a allows (nil: all).
func (s *lexScores) topAllowed(k int, a *allowed) []scored {
	if a == nil {
		return s.top(k)
	}
	if k <= 0 {
		return nil
	}
	t := newTopK(k)
	for _, d := range s.matched {
		if a.set.has(d) {
			t.push(d, s.score[d])
		}
	}
	return t.sorted()
}

// searchWithin returns the k slots of allow (nil: every slot) most similar
// to q, alive in v, from a walk that keeps the max(ef, k) best it meets
// (ef 0: the graph's efSearch, else efSearchFor its size).
// The walk goes through every node, allowed or not (dropping the others
// would break the graph into islands), but keeps only allowed ones; since
// its result list fills with allowed nodes only, it walks until it holds
// ef of them, which widens the search by itself as the filter narrows.
func (g *hnsw) searchWithin(v *view, q []float32, k, ef int, allow slotSet) []scored {
	if v.entry == noNode || k <= 0 {
		return nil
	}
	sc := &v.scope
	c := g.getCtx(sc.n)
	defer g.putCtx(c)
	qc := c.queryCode(q)
	cur := scored{v.entry, sc.pages.approx(qc, v.entry)}
	for layer := v.maxLevel; layer > 0; layer-- {
		cur = g.greedy(c, sc, qc, cur, layer, false)
	}
	c.allow = allow
	// With nothing deleted and no filter, every node may be returned: not
	// asking spares a read of each one's deletion mark, a miss to memory
	// like its code.
	liveOnly := v.dead > 0 || allow != nil
	res := g.searchLayer(c, sc, qc, []scored{cur}, max(cmp.Or(ef, g.efSearch, efSearchFor(sc.n)), k), 0, false, liveOnly)
	c.allow = nil
	return rescore(sc.pages, q, res, k)
}
