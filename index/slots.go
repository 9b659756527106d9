package index

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/viterin/vek/vek32"
)

// Slots. Every entry of a generation (see generation.go) lives in a slot,
// numbered in the order entries were added; the vector, the lexical doc and
// the graph node of an entry share its slot number. A slot's data sits in
// pages that are allocated whole and never move, grow or shrink, so a
// writer can append slots past the published count while searches read the
// slots below it without any lock. Nothing of a slot is rewritten after it
// is published except its deletion epoch and its graph links, which are
// read and written atomically.
const (
	firstPageShift = 4  // pages 0 and 1 hold 1<<firstPageShift slots
	maxPageShift   = 12 // pages double up to 1<<maxPageShift slots, then stay
	maxPageSlots   = 1 << maxPageShift
)

// pageOf returns the page holding slot s and s's index within it. Pages
// double in size (16, 16, 32, … 2048 slots) until slot 4096 and hold 4096
// slots each from there, so a small owner wastes little and a large one
// allocates in steps of a few megabytes.
func pageOf(s uint32) (page, off int) {
	switch {
	case s < 1<<firstPageShift:
		return 0, int(s)
	case s < maxPageSlots:
		p := bits.Len32(s) - firstPageShift
		return p, int(s) - 1<<(p+firstPageShift-1)
	default:
		return int(s>>maxPageShift) + maxPageShift - firstPageShift, int(s & (maxPageSlots - 1))
	}
}

// pageSlots is the number of slots page p holds.
func pageSlots(p int) int {
	switch {
	case p == 0:
		return 1 << firstPageShift
	case p <= maxPageShift-firstPageShift:
		return 1 << (p + firstPageShift - 1)
	default:
		return maxPageSlots
	}
}

// page holds the data of a run of consecutive slots.
type page struct {
	dim  int
	vecs []float32 // slot i's vector is vecs[i*dim : (i+1)*dim]
	// codes and scales are the vectors quantised (see quant.go): slot
	// i's codes are codes[i*dim : (i+1)*dim].
	codes  []int8
	scales []float32
	ids    []uint64 // entry ID
	docLen []uint32 // lexical doc length in terms
	// The language the slot's text was analysed in, and the length of
	// its head (document name and title; see fields.go).
	lang    []uint8
	headLen []uint32
	doc     []uint32 // document ordinal+1, 0 for none (see docs.go)
	// deadAt is the first epoch at which the slot is deleted; 0 = live.
	deadAt []atomic.Uint64

	// Graph nodes, only in generations searched through the graph.
	levels []uint8
	links0 []uint32   // layer 0: (hnswM0+1) words per slot, count then links
	upper  [][]uint32 // layers 1..level: (hnswM+1) words each

	// scratchVecs says vecs is in a scratch file (see VectorFiles).
	scratchVecs bool

	// src is the snapshot the page's arrays are read from in place, nil
	// for a page in the heap (see mapped.go); holding it keeps the file
	// mapped.
	src *mapping
}

func newPage(p, dim int, graph bool, vectors *VectorFiles) *page {
	n := pageSlots(p)
	pg := &page{
		dim:     dim,
		codes:   make([]int8, n*dim),
		scales:  make([]float32, n),
		ids:     make([]uint64, n),
		docLen:  make([]uint32, n),
		lang:    make([]uint8, n),
		headLen: make([]uint32, n),
		doc:     make([]uint32, n),
		deadAt:  make([]atomic.Uint64, n),
	}
	pg.vecs = vectors.alloc(pg, n*dim)
	if graph {
		pg.addGraph()
	}
	return pg
}

// addGraph makes room for the graph nodes of the page's slots.
func (pg *page) addGraph() {
	n := len(pg.ids)
	pg.levels = make([]uint8, n)
	pg.links0 = make([]uint32, n*(hnswM0+1))
	pg.upper = make([][]uint32, n)
}

// pages is a directory of pages. A view keeps the directory header it was
// published with; the writer appends pages to its own, so a view's pages
// cover every slot it may read.
type pages []*page

func (ps pages) vec(s uint32) []float32 {
	p, off := pageOf(s)
	pg := ps[p]
	o := off * pg.dim
	return pg.vecs[o : o+pg.dim : o+pg.dim]
}

// code returns slot s's quantised vector.
func (ps pages) code(s uint32) code {
	p, off := pageOf(s)
	pg := ps[p]
	o := off * pg.dim
	return code{pg.codes[o : o+pg.dim : o+pg.dim], pg.scales[off]}
}

func (ps pages) id(s uint32) uint64 {
	p, off := pageOf(s)
	return ps[p].ids[off]
}

// byPage calls fn with each run of list's postings (in slot order) whose
// slots are in one page, that page, and its first slot: a pass over a
// long list then finds each page once rather than each posting's.
func (ps pages) byPage(list []posting, fn func(pg *page, first uint32, run []posting)) {
	for len(list) > 0 {
		p, off := pageOf(list[0].doc)
		first := list[0].doc - uint32(off)
		end := first + uint32(pageSlots(p))
		n := len(list)
		if list[n-1].doc >= end {
			n = seek(list, end)
		}
		fn(ps[p], first, list[:n])
		list = list[n:]
	}
}

func (ps pages) docLen(s uint32) uint32 {
	p, off := pageOf(s)
	return ps[p].docLen[off]
}

func (ps pages) deadAt(s uint32) *atomic.Uint64 {
	p, off := pageOf(s)
	return &ps[p].deadAt[off]
}

func (ps pages) level(s uint32) int {
	p, off := pageOf(s)
	return int(ps[p].levels[off])
}

// links returns s's link list on layer: word 0 is the count. Its words are
// accessed atomically, because inserts rewrite lists that searches read.
func (ps pages) links(s uint32, layer int) []uint32 {
	p, off := pageOf(s)
	pg := ps[p]
	if layer == 0 {
		o := off * (hnswM0 + 1)
		return pg.links0[o : o+hnswM0+1]
	}
	o := (layer - 1) * (hnswM + 1)
	return pg.upper[off][o : o+hnswM+1]
}

// dot is the similarity of a query to a slot: vectors are unit length, so
// the dot product is the cosine.
func (ps pages) dot(q []float32, s uint32) float32 {
	p, off := pageOf(s)
	pg := ps[p]
	o := off * pg.dim
	d := vek32.Dot(q, pg.vecs[o:o+pg.dim])
	runtime.KeepAlive(pg) // its vectors may be mapped: see allocVectors and mapped.go
	return d
}

// approx is dot's approximation from the codes, for the graph's walks and
// the scans; their best candidates are re-scored with dot.
func (ps pages) approx(q code, s uint32) float32 {
	return q.approx(ps.code(s))
}

// prefetchCode asks for slot s's codes and scale ahead of an approx.
func (ps pages) prefetchCode(s uint32) {
	p, off := pageOf(s)
	pg := ps[p]
	if pg.dim == 0 {
		return
	}
	prefetch(unsafe.Pointer(&pg.codes[off*pg.dim]), pg.dim)
	prefetch(unsafe.Pointer(&pg.scales[off]), 4)
}

// scope is the part of a generation a reader may touch: the slots below n
// of pages, of which those not deleted by epoch are alive. A search takes
// its scope from its view; the writer's own graph walks use every slot
// appended so far.
type scope struct {
	pages pages
	n     uint32
	epoch uint64
}

// alive reports whether slot s (below sc.n) is an entry at sc.epoch: a
// delete made for a later epoch is not seen yet.
func (sc *scope) alive(s uint32) bool {
	p, off := pageOf(s)
	return sc.aliveAt(sc.pages[p], uint32(off))
}

// aliveAt is alive of the slot at offset o of page pg.
func (sc *scope) aliveAt(pg *page, o uint32) bool {
	d := pg.deadAt[o].Load()
	return d == 0 || d > sc.epoch
}
