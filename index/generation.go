package index

import (
	"slices"
	"sync"
)

// generation is one lifetime of an owner's slot numbering: its slots are
// only appended to (and marked deleted) until compaction builds the next
// generation off to the side. The writer owns its fields; searches reach
// a generation through a view, which says how much of it they may read.
type generation struct {
	dim   int
	pages pages  // the writer's directory; views keep older headers
	n     uint32 // slots appended
	lex   *lexicon
	langs langSlots // the slots of each language that has few
	dead  deadSlots // the deleted slots, while they are few
	graph *hnsw     // nil: vectors are scanned

	// The documents of the slots (see docs.go): the writer's directory,
	// how many there are, and, for the writer only, each one's live slots.
	docs     docPages
	nDocs    uint32
	docLive  []uint32
	interned map[string]string // writer only: see intern

	// file is the snapshot the generation was read from in place, nil
	// for one built in the heap (see segment.go).
	file *snapshotFile
	// vectors, when set, holds the float vectors of the pages the
	// generation allocates (see Options.Vectors).
	vectors *VectorFiles
}

func newGeneration(dim int, graph *hnsw, vectors *VectorFiles) *generation {
	return &generation{dim: dim, lex: newLexicon(), graph: graph, vectors: vectors}
}

// appendSlot stores an entry in the next slot, draws its graph level, and
// returns the slot. The entry is not yet searchable: its postings are
// staged by the caller, its graph node is linked by hnsw.insert, and
// searches see neither before a view with a larger n is published.
func (g *generation) appendSlot(id uint64, vec []float32, docLen uint32) uint32 {
	lvl := 0
	if g.graph != nil {
		lvl = g.graph.drawLevel()
	}
	return g.appendStored(id, vec, docLen, lvl)
}

// appendStored is appendSlot of a slot whose graph level is known (a
// segment's).
func (g *generation) appendStored(id uint64, vec []float32, docLen uint32, lvl int) uint32 {
	s := g.n
	p, off := pageOf(s)
	if p == len(g.pages) {
		g.pages = append(g.pages, newPage(p, g.dim, g.graph != nil, g.vectors))
	}
	pg := g.pages[p]
	if off == len(pg.ids) {
		pg = g.ownLast(p)
	}
	copy(pg.vecs[off*g.dim:(off+1)*g.dim], vec)
	pg.scales[off] = quantise(pg.codes[off*g.dim:(off+1)*g.dim], vec)
	pg.ids[off] = id
	pg.docLen[off] = docLen
	if g.graph != nil {
		pg.levels[off] = uint8(lvl)
		if lvl > 0 {
			pg.upper[off] = make([]uint32, lvl*(hnswM+1))
		}
	}
	g.n++
	return s
}

// ownLast replaces page p, the last, read in place from a snapshot with
// room only for the slots it held (see loadMapped), by a copy in the heap
// with room for all of its slots, and returns it. The directory is
// copied, not changed in place: views published before keep reading the
// page in the file. Link lists of upper layers are shared, as every
// page's are rewritten in place.
func (g *generation) ownLast(p int) *page {
	old := g.pages[p]
	pg := newPage(p, g.dim, g.graph != nil, g.vectors)
	copy(pg.vecs, old.vecs)
	copy(pg.codes, old.codes)
	copy(pg.scales, old.scales)
	copy(pg.ids, old.ids)
	copy(pg.docLen, old.docLen)
	copy(pg.lang, old.lang)
	copy(pg.headLen, old.headLen)
	copy(pg.doc, old.doc)
	for i := range old.deadAt {
		pg.deadAt[i].Store(old.deadAt[i].Load())
	}
	if g.graph != nil {
		copy(pg.levels, old.levels)
		copy(pg.links0, old.links0) // the writer's own: only it rewrites them
		copy(pg.upper, old.upper)
	}
	g.pages = append(slices.Clone(g.pages[:p]), pg)
	return pg
}

// indexTerms stages slot s's postings.
func (g *generation) indexTerms(s uint32, counts []tally[termKey]) {
	for _, c := range counts {
		g.lex.stage(g.lex.termFor(c.of), posting{s, c.tf})
	}
}

// scope is the writer's view of g: every slot appended so far.
func (g *generation) scope() *scope {
	return &scope{pages: g.pages, n: g.n}
}

// view is one published version of an owner's index: immutable, and all a
// search needs. Storage is shared with the writer, which only appends past
// n, marks deletions with a later epoch, and rewrites graph links
// atomically; so the view's entries are exactly the slots below n not
// deleted by epoch.
type view struct {
	scope
	gen  *generation
	docs docScope // the documents of the slots below n

	// superseded is closed when the next version is published.
	superseded chan struct{}

	live     int       // entries: slots below n alive at epoch
	dead     int       // slots below n deleted by epoch
	totalLen uint64    // sum of the live docs' lengths, for BM25
	lex      lexStats  // head lengths and languages, for BM25F and queries
	langs    langSlots // the generation's, as published
	deleted  []uint32  // the slots deleted, in order, when len(deleted) == dead
	skips    sync.Map  // skipKey -> the docs skipped lists, merged (see skipped)

	// The graph's entry point and top layer when the view was published:
	// the writer moves them when a new node rises above the top.
	entry    uint32
	maxLevel int

	tuning *tuning // the index's
}

// deadSlots lists a generation's deleted slots while they are few, so that
// a search can skip them in a long posting list by a search each
// (see view.bodyRuns) rather than ask every posting whether its doc lives:
// one deletion would otherwise slow every search until compaction.
type deadSlots struct {
	sorted  []uint32 // as of the last publish; replaced, never changed, as views keep it
	pending []uint32 // deleted since, in any order
	many    bool     // past deadListedMax: no longer listed
}

// deadListedMax is the most deleted slots listed: merging them at a
// publish stays cheap, and past it a list is as fast to filter one
// posting at a time.
const deadListedMax = 1 << 13

func (d *deadSlots) add(s uint32) {
	switch {
	case d.many:
	case len(d.sorted)+len(d.pending) == deadListedMax:
		*d = deadSlots{many: true}
	default:
		d.pending = append(d.pending, s)
	}
}

// publish merges the slots deleted since the last publish into a new
// sorted list and returns it.
func (d *deadSlots) publish() []uint32 {
	if len(d.pending) > 0 {
		slices.Sort(d.pending)
		d.sorted = mergeSorted(make([]uint32, 0, len(d.sorted)+len(d.pending)), d.sorted, d.pending)
		d.pending = d.pending[:0]
	}
	return d.sorted
}
