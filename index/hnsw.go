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
// is the paper's recommended middle ground for 100–1000 dimensions. The ef
// values come from sweeps on 100k×384 clustered vectors (RunIndexBench's
// data), where building is the tight budget and searching is not:
//
//	efConstruction 100, ef  64: recall@10 0.967, build 1.0×
//	efConstruction  64, ef 100: recall@10 0.976, build 1.4×
//	efConstruction  48, ef 160: recall@10 0.973, build 1.7×, p50 ≈ 0.5 ms
//
// so the graph is built cheaply and searched with a wider list.
const (
	hnswM  = 16
	hnswM0 = 2 * hnswM
	// hnswEfConstruction bounds the candidate list while linking a new node;
	// larger builds a better graph, slower.
	hnswEfConstruction = 48
	// hnswEfSearch is the least candidate list a search keeps; a search for
	// k > hnswEfSearch keeps k.
	hnswEfSearch = 160
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
// vectorSet. Layer 0 links live in one flat array (slot·(M0+1) words: count,
// then neighbours) so a search touches contiguous memory; the few nodes on
// upper layers keep a small slice each.
//
// Concurrency: the owner serialises insert against search (write lock vs
// read lock). Within one insert call, nodes are linked in parallel; link
// lists are then read and written under striped locks. Searches run without
// node locks.
//
// Deletes are tombstones in the vectorSet: a dead node still routes searches
// (removing it would cut paths) but is never returned. The owner rebuilds
// the graph when tombstones reach half the slots.
type hnsw struct {
	vs     *vectorSet
	levels []uint8
	links0 []uint32
	upper  [][]uint32 // slot -> layers 1..level, (M+1) words each

	entryMu  sync.Mutex
	entry    uint32
	maxLevel int

	locks [lockStripes]sync.Mutex
	rng   *rand.Rand
	mL    float64
	ctxs  sync.Pool

	// efConstruction and efSearch start at the constants above; they are
	// fields so that benchmarks can sweep them.
	efConstruction, efSearch int
}

func newHNSW(vs *vectorSet) *hnsw {
	return &hnsw{
		vs:    vs,
		entry: noNode,
		rng:   rand.New(rand.NewPCG(0x5eed, 0xd0c5)),
		mL:    1 / math.Log(hnswM),

		efConstruction: hnswEfConstruction,
		efSearch:       hnswEfSearch,
	}
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
}

func (g *hnsw) getCtx() *searchCtx {
	c, _ := g.ctxs.Get().(*searchCtx)
	if c == nil {
		c = &searchCtx{}
	}
	if n := g.vs.slots(); len(c.visited) < n {
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

// list returns s's link list on layer: list[0] is the count.
func (g *hnsw) list(s uint32, layer int) []uint32 {
	if layer == 0 {
		off := int(s) * (hnswM0 + 1)
		return g.links0[off : off+hnswM0+1]
	}
	off := (layer - 1) * (hnswM + 1)
	return g.upper[s][off : off+hnswM+1]
}

// neighbours returns s's links on layer. When locked, it copies them into
// buf under s's stripe lock, because another inserter may be rewriting them.
func (g *hnsw) neighbours(s uint32, layer int, locked bool, buf []uint32) []uint32 {
	if !locked {
		l := g.list(s, layer)
		return l[1 : 1+l[0]]
	}
	mu := &g.locks[s%lockStripes]
	mu.Lock()
	l := g.list(s, layer)
	buf = append(buf[:0], l[1:1+l[0]]...)
	mu.Unlock()
	return buf
}

// grow makes room for slots up to n and draws the level of each new slot.
// It runs before any of them is inserted, single-threaded, so the
// parallel phase never reallocates shared arrays.
func (g *hnsw) grow(n int) {
	old := len(g.levels)
	if n <= old {
		return
	}
	g.links0 = append(g.links0, make([]uint32, (n-old)*(hnswM0+1))...)
	for s := old; s < n; s++ {
		lvl := min(int(-math.Log(1-g.rng.Float64())*g.mL), hnswMaxLevel)
		g.levels = append(g.levels, uint8(lvl))
		var up []uint32
		if lvl > 0 {
			up = make([]uint32, lvl*(hnswM+1))
		}
		g.upper = append(g.upper, up)
	}
}

// insert links slots into the graph, in parallel when there are enough.
func (g *hnsw) insert(slots []uint32) {
	if len(slots) == 0 {
		return
	}
	g.grow(g.vs.slots())
	if g.entry == noNode {
		s := slots[0]
		g.entry, g.maxLevel = s, int(g.levels[s])
		slots = slots[1:]
	}
	workers := min(runtime.GOMAXPROCS(0), len(slots)/minPerWorker)
	if workers <= 1 {
		for _, s := range slots {
			g.insertOne(s)
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
				g.insertOne(slots[i])
			}
		}()
	}
	wg.Wait()
}

// insertOne is the paper's INSERT: descend greedily to the node's level,
// then on each layer below collect efConstruction candidates, keep M by the
// neighbour-selection heuristic, and link both ways.
func (g *hnsw) insertOne(q uint32) {
	lvl := int(g.levels[q])
	g.entryMu.Lock()
	ep, top := g.entry, g.maxLevel
	g.entryMu.Unlock()

	c := g.getCtx()
	defer g.putCtx(c)
	qv := g.vs.vec(q)
	cur := scored{ep, g.vs.dot(qv, ep)}
	for layer := top; layer > lvl; layer-- {
		cur = g.greedy(c, qv, cur, layer, true)
	}
	eps := []scored{cur}
	for layer := min(lvl, top); layer >= 0; layer-- {
		found := g.searchLayer(c, qv, eps, g.efConstruction, layer, true, false)
		sel := g.selectNeighbours(found, hnswM, c.sel[:0])
		c.sel = sel
		mu := &g.locks[q%lockStripes]
		mu.Lock()
		l := g.list(q, layer)
		l[0] = uint32(len(sel))
		for i, n := range sel {
			l[1+i] = n.slot
		}
		mu.Unlock()
		for _, n := range sel {
			g.link(n.slot, q, n.score, layer)
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
func (g *hnsw) link(e, q uint32, sim float32, layer int) {
	maxN := hnswM
	if layer == 0 {
		maxN = hnswM0
	}
	mu := &g.locks[e%lockStripes]
	mu.Lock()
	defer mu.Unlock()
	l := g.list(e, layer)
	n := int(l[0])
	if n < maxN {
		l[1+n] = q
		l[0]++
		return
	}
	ev := g.vs.vec(e)
	var buf [hnswM0 + 1]scored
	cands := buf[:0]
	for _, nb := range l[1 : 1+n] {
		cands = append(cands, scored{nb, g.vs.dot(ev, nb)})
	}
	cands = append(cands, scored{q, sim})
	slices.SortFunc(cands, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	var selBuf [hnswM0]scored
	sel := g.selectNeighbours(cands, maxN, selBuf[:0])
	l[0] = uint32(len(sel))
	for i, s := range sel {
		l[1+i] = s.slot
	}
}

// selectNeighbours is the paper's heuristic (algorithm 4): walking
// candidates from most to least similar, keep one only if it is more
// similar to the base than to every one already kept. Clustered data needs
// this: plain top-M links all point into the base's own cluster and leave
// no bridges out of it. cands must be sorted best first.
func (g *hnsw) selectNeighbours(cands []scored, m int, out []scored) []scored {
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		cv := g.vs.vec(c.slot)
		keep := true
		for _, r := range out {
			if g.vs.dot(cv, r.slot) > c.score {
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
func (g *hnsw) greedy(c *searchCtx, qv []float32, cur scored, layer int, locked bool) scored {
	for changed := true; changed; {
		changed = false
		nbrs := g.neighbours(cur.slot, layer, locked, c.nbuf)
		if locked {
			c.nbuf = nbrs
		}
		for _, n := range nbrs {
			if s := g.vs.dot(qv, n); s > cur.score {
				cur, changed = scored{n, s}, true
			}
		}
	}
	return cur
}

// searchLayer is the paper's SEARCH-LAYER: a best-first walk from eps that
// keeps the ef best nodes seen and stops when the best unexpanded candidate
// is worse than all of them. With liveOnly, tombstoned nodes are walked
// through but not kept. The result is sorted best first.
func (g *hnsw) searchLayer(c *searchCtx, qv []float32, eps []scored, ef, layer int, locked, liveOnly bool) []scored {
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
		if !liveOnly || !g.vs.dead[ep.slot] {
			c.res.push(ep.slot, ep.score)
		}
	}
	for len(c.cand) > 0 {
		cur := c.cand.pop()
		if len(c.res.heap) == ef && cur.score < c.res.heap[0].score {
			break
		}
		nbrs := g.neighbours(cur.slot, layer, locked, c.nbuf)
		if locked {
			c.nbuf = nbrs
		}
		for _, n := range nbrs {
			if !c.visit(n) {
				continue
			}
			s := g.vs.dot(qv, n)
			if len(c.res.heap) < ef || s > c.res.heap[0].score {
				c.cand.push(scored{n, s})
				if !liveOnly || !g.vs.dead[n] {
					c.res.push(n, s)
				}
			}
		}
	}
	return c.res.sorted()
}

// search returns the k most similar live slots.
func (g *hnsw) search(q []float32, k int) []scored {
	if g.entry == noNode || k <= 0 {
		return nil
	}
	c := g.getCtx()
	defer g.putCtx(c)
	cur := scored{g.entry, g.vs.dot(q, g.entry)}
	for layer := g.maxLevel; layer > 0; layer-- {
		cur = g.greedy(c, q, cur, layer, false)
	}
	res := g.searchLayer(c, q, []scored{cur}, max(g.efSearch, k), 0, false, true)
	if len(res) > k {
		res = res[:k]
	}
	return res
}
