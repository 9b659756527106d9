package index

import (
	"cmp"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// HNSW parameters (Malkov & Yashunin, 2018). M=16 with 2M links on layer 0
// is the paper's recommended middle ground for 100–1000 dimensions.
//
// The candidate lists come from sweeps of `docsift bench index` on
// clustered 384-d vectors (RunIndexBench's data, 2 cores). At 100,000
// vectors any choice is good:
//
//	efConstruction  48, ef 160: recall@10 0.968, build 10,700 vectors/s
//	efConstruction 200, ef  80: recall@10 0.984, build  3,500 vectors/s
//
// At 1,000,000 a narrow build cannot be made up for by a wide search:
//
//	efConstruction  48, ef 160:             recall@10 0.655, build 4,000 vectors/s
//	efConstruction 128, ef 480 / 640:       recall@10 0.935 / 0.953, build 2,200
//	efConstruction 200, ef 160 / 480 / 640: recall@10 0.816 / 0.967 / 0.978, build 1,450
//
// (hnswlib on the same vectors, built from 48, reaches 0.849 at ef 640 and
// 0.911 at 2,560; from 200, 0.827 at 160 and 0.979 at 640.) A
// learned model's vectors therefore build with hnswEfConstructionLearned:
// the model's embedding costs far more per chunk than the insert (1,450
// inserts/s at 1M), and their neighbours are what the vector side is
// for. The built-in embedder's vectors build with hnswEfConstruction: its
// embedding is cheap, ingest speed is its point, and their nearest
// neighbours are near ties no build finds (see hashedCandidates), so a
// wider build buys little: from 24 instead of 48 at 100,000 chunks,
// recall@10 of the walk alone fell from 0.21 to 0.16, whole hybrid
// searches kept their top ten as often (BenchmarkSearchSnapshot/hybrid),
// the judged sets scored the same to the last digit, and a document cost
// the server a fifth less CPU. Searches widen with the graph
// (efSearchFor).
const (
	hnswM  = 16
	hnswM0 = 2 * hnswM
	// hnswEfConstruction bounds the candidate list while linking a new node
	// of the built-in embedder's vectors, hnswEfConstructionLearned one of
	// a learned model's; larger builds a better graph, slower.
	hnswEfConstruction        = 24
	hnswEfConstructionLearned = 200
	// hnswEfSearch is the least candidate list a search keeps, up to
	// efSearchGrowFrom nodes (see efSearchFor); a search for more keeps
	// as many as it asks for.
	hnswEfSearch     = 160
	efSearchGrowFrom = 100_000
	// hnswMaxLevel caps the random level; at M=16 level 8 already needs
	// ~16^8 nodes to be reached by chance.
	hnswMaxLevel = 15
	// lockStripes is the number of mutexes guarding link lists during a
	// parallel insert. Striping instead of a lock per node keeps memory flat
	// and the array fixed while slots grow; an inserter holds one at a time,
	// so stripes never deadlock.
	lockStripes = 4096
	// minPerWorker is the fewest inserts worth handing to another goroutine.
	minPerWorker = 16
	noNode       = ^uint32(0)
)

// hnsw is a Hierarchical Navigable Small World graph over the slots of a
// generation. Its nodes live in the slots' pages (layer 0 links in one flat
// array per page, slot·(M0+1) words: count, then neighbours, so a search
// touches contiguous memory; the few nodes on upper layers keep a small
// slice each); hnsw itself holds what only the writer uses.
//
// Concurrency: there is one writer, and searches run while it inserts.
// Within one insert call, nodes are linked in parallel, under striped locks.
// Searches take no lock: they read link words atomically, and a writer
// rewriting a list stores the neighbours before the count, so every word a
// search reads below the count names a node on that layer. A search skips
// neighbours at or past its view's n: their vectors may still be being
// written. A new node links into old nodes' lists before its view is
// published; a search on an older view just steps over it.
//
// Deletes are tombstones: a deleted node still routes searches (removing it
// would break paths) but is never returned. The owner rebuilds the graph when
// tombstones reach half the slots.
type hnsw struct {
	// entryMu guards the writer's entry point during a parallel insert;
	// a view copies it when published.
	entryMu  sync.Mutex
	entry    uint32
	maxLevel int

	locks [lockStripes]sync.Mutex
	rng   *rand.Rand
	mL    float64
	ctxs  sync.Pool

	// efConstruction is the insert candidate list (see efConstructionFor);
	// efSearch, when not 0, the search one instead of efSearchFor's, so
	// that benchmarks can sweep it.
	efConstruction, efSearch int

	// touched, for a graph read from a snapshot, marks the file's nodes
	// whose links an insert rewrites (see segment.go); since, those of
	// a snapshot being written (see wholeWrite).
	touched, since touchedSet
}

// newHNSW returns an empty graph whose levels are drawn from a generator
// seeded with seed, linking each node from efConstruction candidates.
func newHNSW(seed uint64, efConstruction int) *hnsw {
	return &hnsw{
		entry: noNode,
		rng:   rand.New(rand.NewPCG(seed, 0xd0c5)),
		mL:    1 / math.Log(hnswM),

		efConstruction: efConstruction,
	}
}

// efConstructionFor is the insert candidate list of a graph of model's
// vectors (see the parameters above).
func efConstructionFor(model string) int {
	if hashed(model) {
		return hnswEfConstruction
	}
	return hnswEfConstructionLearned
}

// efSearchFor is the candidate list a search keeps in a graph of n nodes:
// hnswEfSearch up to efSearchGrowFrom, then twice hnswEfSearch more for
// every tenfold, 480 at a million. A bigger graph has longer paths between a
// query's neighbours, and a list that finds them at 100,000 misses a
// fifth at a million (recall@10 0.816 against 0.967, for 1.4 times the
// time).
func efSearchFor(n uint32) int {
	if n <= efSearchGrowFrom {
		return hnswEfSearch
	}
	return int(hnswEfSearch * (1 + 2*math.Log10(float64(n)/efSearchGrowFrom)))
}

// hnswSeed seeds the level generator of a graph built from scratch.
const hnswSeed = 0x5eed

// drawLevel draws a new node's top layer; the writer calls it once per
// slot, in slot order.
func (g *hnsw) drawLevel() int {
	return min(int(-math.Log(1-g.rng.Float64())*g.mL), hnswMaxLevel)
}

// searchCtx is the per-goroutine scratch of a search: a visited set that
// is reset in O(1) by bumping an epoch, and reusable heaps.
type searchCtx struct {
	visited []uint32
	epoch   uint32
	cand    maxHeap
	res     topK
	nbuf    []uint32
	sel     []scored
	// allow, during a filtered search, is the set of slots it may keep.
	allow slotSet
	// qcode holds the query's codes during a search.
	qcode []int8
}

// queryCode quantises a search's query into c's buffer.
func (c *searchCtx) queryCode(q []float32) code {
	c.qcode = slices.Grow(c.qcode[:0], len(q))[:len(q)]
	return code{c.qcode, quantise(c.qcode, q)}
}

// keeps reports whether a search with liveOnly may return slot s: alive
// in sc and, in a filtered search, allowed.
func (c *searchCtx) keeps(sc *scope, s uint32) bool {
	return sc.alive(s) && (c.allow == nil || c.allow.has(s))
}

// getCtx returns scratch for a walk over n slots.
func (g *hnsw) getCtx(n uint32) *searchCtx {
	c, _ := g.ctxs.Get().(*searchCtx)
	if c == nil {
		c = &searchCtx{}
	}
	if len(c.visited) < int(n) {
		c.visited = make([]uint32, n+n/4)
		c.epoch = 0
	}
	c.epoch++
	if c.epoch == 0 { // wrapped: old marks could collide
		clear(c.visited)
		c.epoch = 1
	}
	return c
}

func (g *hnsw) putCtx(c *searchCtx) { g.ctxs.Put(c) }

func (c *searchCtx) visit(s uint32) bool {
	if c.visited[s] == c.epoch {
		return false
	}
	c.visited[s] = c.epoch
	return true
}

// neighbours copies s's links on layer that lie within sc into buf. The
// writer's walks take s's stripe lock (another inserter may be rewriting
// the list); searches rely on the write order described on hnsw.
func (g *hnsw) neighbours(sc *scope, s uint32, layer int, locked bool, buf []uint32) []uint32 {
	l := sc.pages.links(s, layer)
	var mu *sync.Mutex
	if locked {
		mu = &g.locks[s%lockStripes]
		mu.Lock()
	}
	buf = buf[:0]
	n := atomic.LoadUint32(&l[0])
	for i := 1; i <= int(n); i++ {
		if nb := atomic.LoadUint32(&l[i]); nb < sc.n {
			buf = append(buf, nb)
		}
	}
	if locked {
		mu.Unlock()
	}
	return buf
}

// setLinks replaces list's neighbours with sel: neighbours first, count
// last, so a concurrent search never reads a word that was not a link.
// The caller holds the list's stripe lock.
func setLinks(list []uint32, sel []scored) {
	for i, n := range sel {
		atomic.StoreUint32(&list[1+i], n.slot)
	}
	atomic.StoreUint32(&list[0], uint32(len(sel)))
}

// insert links slots (the writer's newest, in sc) into the graph, in
// parallel when there are enough.
//
// Searches run meanwhile and need CPU, not locks: so an insert leaves one P
// to them (on two cores it links at half the speed, but nothing waits for
// it). Inserters do not yield after each node: a yield there measured no
// better for searches during commits (internal/runtimepolicy's doc).
func (g *hnsw) insert(sc *scope, slots []uint32) {
	if len(slots) == 0 {
		return
	}
	if g.entry == noNode {
		s := slots[0]
		g.entry, g.maxLevel = s, sc.pages.level(s)
		slots = slots[1:]
	}
	workers := min(runtime.GOMAXPROCS(0)-1, len(slots)/minPerWorker)
	if workers <= 1 {
		for _, s := range slots {
			g.insertOne(sc, s)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(slots) {
					return
				}
				g.insertOne(sc, slots[i])
			}
		}()
	}
	wg.Wait()
}

// insertOne is the paper's INSERT: descend greedily to the node's level,
// then on each layer below collect efConstruction candidates, keep M by the
// neighbour-selection heuristic, and link both ways.
func (g *hnsw) insertOne(sc *scope, q uint32) {
	lvl := sc.pages.level(q)
	g.entryMu.Lock()
	ep, top := g.entry, g.maxLevel
	g.entryMu.Unlock()

	c := g.getCtx(sc.n)
	defer g.putCtx(c)
	qv := sc.pages.code(q)
	cur := scored{ep, sc.pages.approx(qv, ep)}
	for layer := top; layer > lvl; layer-- {
		cur = g.greedy(c, sc, qv, cur, layer, true)
	}
	eps := []scored{cur}
	for layer := min(lvl, top); layer >= 0; layer-- {
		found := g.searchLayer(c, sc, qv, eps, g.efConstruction, layer, true, false)
		sel := g.selectNeighbours(sc, found, hnswM, c.sel[:0])
		c.sel = sel
		mu := &g.locks[q%lockStripes]
		mu.Lock()
		setLinks(sc.pages.links(q, layer), sel)
		mu.Unlock()
		for _, n := range sel {
			g.link(sc, n.slot, q, n.score, layer)
		}
		eps = found
	}
	if lvl > top {
		g.entryMu.Lock()
		if lvl > g.maxLevel {
			g.entry, g.maxLevel = q, lvl
		}
		g.entryMu.Unlock()
	}
}

// link adds q to e's links on layer. A full list is re-chosen by the
// heuristic from its members plus q, which keeps links pointing in diverse
// directions instead of dropping the farthest.
func (g *hnsw) link(sc *scope, e, q uint32, sim float32, layer int) {
	maxN := hnswM
	if layer == 0 {
		maxN = hnswM0
	}
	mu := &g.locks[e%lockStripes]
	mu.Lock()
	defer mu.Unlock()
	g.touched.mark(e)
	g.since.mark(e)
	l := sc.pages.links(e, layer)
	n := int(atomic.LoadUint32(&l[0]))
	if n < maxN {
		atomic.StoreUint32(&l[1+n], q)
		atomic.StoreUint32(&l[0], uint32(n+1))
		return
	}
	ev := sc.pages.code(e)
	var buf [hnswM0 + 1]scored
	cands := buf[:0]
	for i := 1; i <= n; i++ {
		nb := atomic.LoadUint32(&l[i])
		cands = append(cands, scored{nb, sc.pages.approx(ev, nb)})
	}
	cands = append(cands, scored{q, sim})
	slices.SortFunc(cands, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	var selBuf [hnswM0]scored
	setLinks(l, g.selectNeighbours(sc, cands, maxN, selBuf[:0]))
}

// selectNeighbours is the paper's heuristic (algorithm 4): walking
// candidates from most to least similar, keep one only if it is more
// similar to the base than to every one already kept. Clustered data needs
// this: plain top-M links all point into the base's own cluster and leave
// no bridges out of it. cands must be sorted best first.
func (g *hnsw) selectNeighbours(sc *scope, cands []scored, m int, out []scored) []scored {
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		cv := sc.pages.code(c.slot)
		keep := true
		for _, r := range out {
			if sc.pages.approx(cv, r.slot) > c.score {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// greedy walks layer from cur to a local best: the ef=1 search the paper
// uses above the target layer.
func (g *hnsw) greedy(c *searchCtx, sc *scope, qv code, cur scored, layer int, locked bool) scored {
	for changed := true; changed; {
		changed = false
		c.nbuf = g.neighbours(sc, cur.slot, layer, locked, c.nbuf)
		for _, n := range c.nbuf {
			if s := sc.pages.approx(qv, n); s > cur.score {
				cur, changed = scored{n, s}, true
			}
		}
	}
	return cur
}

// searchLayer is the paper's SEARCH-LAYER: a best-first walk from eps that
// keeps the ef best nodes seen and stops when the best unexpanded candidate
// is worse than all of them. With liveOnly, nodes not alive in sc (or not
// in c.allow, when set) are walked through but not kept. The result is
// sorted best first.
func (g *hnsw) searchLayer(c *searchCtx, sc *scope, qv code, eps []scored, ef, layer int, locked, liveOnly bool) []scored {
	c.epoch++
	if c.epoch == 0 {
		clear(c.visited)
		c.epoch = 1
	}
	c.cand = c.cand[:0]
	c.res.k = ef
	c.res.heap = c.res.heap[:0]
	for _, ep := range eps {
		if !c.visit(ep.slot) {
			continue
		}
		c.cand.push(ep)
		if !liveOnly || c.keeps(sc, ep.slot) {
			c.res.push(ep.slot, ep.score)
		}
	}
	for len(c.cand) > 0 {
		cur := c.cand.pop()
		if len(c.res.heap) == ef && cur.score < c.res.heap[0].score {
			break
		}
		c.nbuf = g.neighbours(sc, cur.slot, layer, locked, c.nbuf)
		// The neighbours not seen yet, their codes all asked for before
		// the first is scored (see prefetch).
		todo := c.nbuf[:0]
		for _, n := range c.nbuf {
			if c.visit(n) {
				todo = append(todo, n)
			}
		}
		for _, n := range todo {
			sc.pages.prefetchCode(n)
		}
		for _, n := range todo {
			s := sc.pages.approx(qv, n)
			if len(c.res.heap) < ef || s > c.res.heap[0].score {
				c.cand.push(scored{n, s})
				if !liveOnly || c.keeps(sc, n) {
					c.res.push(n, s)
				}
			}
		}
	}
	return c.res.sorted()
}
