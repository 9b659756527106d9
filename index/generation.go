package index

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
}

func newGeneration(dim int, graph *hnsw) *generation {
	return &generation{dim: dim, lex: newLexicon(), graph: graph}
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
		g.pages = append(g.pages, newPage(p, g.dim, g.graph != nil))
	}
	pg := g.pages[p]
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

// indexTerms stages slot s's postings.
func (g *generation) indexTerms(s uint32, counts []termCount) {
	for _, c := range counts {
		g.lex.stage(g.lex.termFor(keyOf(c.term)), posting{s, c.tf})
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

	// The graph's entry point and top layer when the view was published:
	// the writer moves them when a new node rises above the top.
	entry    uint32
	maxLevel int
}
