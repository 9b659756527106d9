// Package index is docsift's per-owner search index: a vector index (exact
// scan for small owners, an HNSW graph for large ones) and a BM25 lexical
// index over the same entries, fused into one ranking, with atomic snapshots.
//
// An OwnerIndex knows entries only by their chunk sequence number; the store
// owns text, documents and pages. The index never imports the store.
package index

import (
	"fmt"
	"sort"
	"sync"

	"github.com/docsift/docsift/analysis"
)

// Entry is one chunk as the index sees it.
type Entry struct {
	ID     uint64    // chunk sequence number, unique in the store
	Vector []float32 // unit length, len == Dim()
	Text   string    // text for lexical search (document name + chunk text)
}

// Query is one search. Either side may be absent: a nil Vector searches text
// only (the embedder is down), an empty Text searches vectors only.
type Query struct {
	Vector []float32
	Text   string
	K      int
}

// Hit is one result; Score is the fused relevance, higher is better.
type Hit struct {
	ID    uint64
	Score float64
}

// addBatch bounds how many entries one Add inserts while holding the write
// lock, so that a large Add delays concurrent searches by a few milliseconds
// at a time rather than for the whole batch.
const addBatch = 64

// graphThreshold is the owner size from which vectors are searched through
// the HNSW graph instead of scanned. BenchmarkVectorSearch at 384
// dimensions puts the crossover between 2,000 vectors (scan and graph both
// ~0.2 ms) and 5,000 (scan 2–3× slower); below it the scan is as fast, exact,
// and costs nothing to build.
const graphThreshold = 2048

// compactMinDead is the fewest tombstoned vectors worth a rebuild.
const compactMinDead = 1024

// OwnerIndex is the index of one owner. It is safe for concurrent use:
// searches run while other goroutines add and delete.
type OwnerIndex struct {
	model string
	dim   int

	mu  sync.RWMutex
	vs  *vectorSet
	vec vectorSearcher
	lex *lexicalIndex
}

// New returns an empty index for vectors of dim dimensions from model.
func New(model string, dim int) *OwnerIndex {
	x := &OwnerIndex{model: model, dim: dim, vs: newVectorSet(dim), lex: newLexicalIndex()}
	x.vec = exactSearcher{x.vs}
	return x
}

// Model names the embedder the vectors came from; vectors of another model
// must not be added.
func (x *OwnerIndex) Model() string { return x.model }

// Dim is the length of every vector in the index.
func (x *OwnerIndex) Dim() int { return x.dim }

// analysed is an entry with its text already cut into terms, so that the
// costly analysis happens outside the lock.
type analysed struct {
	Entry
	counts []termCount
	length uint32
}

// Add inserts entries; an entry whose ID is already present replaces it. A
// vector of the wrong length fails the whole call before anything changes.
func (x *OwnerIndex) Add(entries ...Entry) error {
	for _, e := range entries {
		if len(e.Vector) != x.dim {
			return fmt.Errorf("index: add %d: vector has %d dimensions, index has %d", e.ID, len(e.Vector), x.dim)
		}
	}
	prepared := make([]analysed, len(entries))
	for i, e := range entries {
		counts, length := countTerms(withPairs(analysis.Terms(e.Text)))
		prepared[i] = analysed{e, counts, length}
	}
	for len(prepared) > 0 {
		n := min(len(prepared), addBatch)
		slots := make([]uint32, n)
		x.mu.Lock()
		for i, e := range prepared[:n] {
			slots[i] = x.vs.add(e.ID, e.Vector)
			x.lex.add(e.ID, e.counts, e.length)
		}
		if _, exact := x.vec.(exactSearcher); exact && x.vs.live() >= graphThreshold {
			x.rebuildVectors()
		} else {
			x.vec.insert(slots)
			x.maybeCompact()
		}
		x.mu.Unlock()
		prepared = prepared[n:]
	}
	return nil
}

// Delete removes ids from all future results; unknown ids are ignored.
func (x *OwnerIndex) Delete(ids ...uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		x.vs.remove(id)
		x.lex.remove(id)
	}
	x.maybeCompact()
}

// maybeCompact rebuilds the vector side once tombstones fill half the
// slots: they cost memory, and a graph search wades through them.
// Rebuilding at a fixed fraction keeps the cost amortised O(1) per delete.
func (x *OwnerIndex) maybeCompact() {
	if x.vs.nDead >= compactMinDead && 2*x.vs.nDead >= x.vs.slots() {
		x.rebuildVectors()
	}
}

// rebuildVectors copies the live vectors into a fresh set and indexes them
// with the searcher their number calls for. The caller holds the write lock.
func (x *OwnerIndex) rebuildVectors() {
	old := x.vs
	vs := newVectorSet(x.dim)
	vs.data = make([]float32, 0, old.live()*x.dim)
	for s, id := range old.ids {
		if !old.dead[s] {
			vs.add(id, old.vec(uint32(s)))
		}
	}
	x.vs = vs
	if vs.live() < graphThreshold {
		x.vec = exactSearcher{vs}
		return
	}
	g := newHNSW(vs)
	slots := make([]uint32, vs.slots())
	for i := range slots {
		slots[i] = uint32(i)
	}
	g.insert(slots)
	x.vec = g
}

// Has reports whether id is in the index.
func (x *OwnerIndex) Has(id uint64) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.vs.slotOf[id]
	return ok
}

// IDs returns every ID in the index in ascending order.
func (x *OwnerIndex) IDs() []uint64 {
	x.mu.RLock()
	ids := make([]uint64, 0, len(x.vs.slotOf))
	for id := range x.vs.slotOf {
		ids = append(ids, id)
	}
	x.mu.RUnlock()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Len is the number of entries in the index.
func (x *OwnerIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.vs.live()
}
