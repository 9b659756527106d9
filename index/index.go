// Package index is docsift's per-owner search index: a vector index (a
// scan for small owners, an HNSW graph for large ones, both over int8 codes
// of the vectors with the best candidates re-scored exactly; see quant.go)
// and a BM25 lexical index over the same entries, fused into one ranking,
// with atomic snapshots.
//
// Searches never wait for writers: they read an immutable published
// version of the owner's index while a writer prepares the next one in
// place (see OwnerIndex).
//
// An OwnerIndex knows entries only by their chunk sequence number; the store
// owns text, documents and pages. The index never imports the store.
package index

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/docsift/docsift/analysis"
)

// Entry is one chunk as the index sees it.
type Entry struct {
	ID     uint64    // chunk sequence number, unique in the store
	Vector []float32 // unit length, len == Dim()
	Text   string    // the chunk's text, for lexical search
	// Doc is the document the chunk belongs to, for filtered searches;
	// nil leaves the entry out of every filtered search. Chunks of one
	// document share one Document (see docs.go).
	Doc *Document
	// Name is the document's name (a file name, or the name given at
	// upload) and Title the chunk's (the document's title, the headings
	// of its sections): searched with the text, as a field of their own
	// (see fields.go).
	Name  string
	Title string
	// Analyzed, when set, is analysis.AnalyzeUnder(Name, Text), made
	// already by whoever built the entry (an embedder that analyses
	// texts on their way to vectors): what this package would detect and
	// analyse, which Analyse then takes instead of doing it again.
	Analyzed *analysis.Analyzed
}

// Query is one search. Either side may be absent: a nil Vector searches text
// only (the embedder is down), an empty Text searches vectors only.
type Query struct {
	Vector []float32
	Text   string
	K      int

	// Filter, when set, restricts the search to the chunks of the
	// documents it allows, inside retrieval: K hits come back whenever K
	// allowed chunks match, however few of the owner's chunks those are.
	Filter Filter
	// FilterKey, when set, names Filter: the set of chunks it allows is
	// kept under that name for later searches with the same key, which
	// must be the same filter (see allowcache.go).
	FilterKey string
	// At, when set, is the version to search (see Current); otherwise
	// the latest.
	At Version
}

// Hit is one result; Score is the fused relevance, higher is better.
type Hit struct {
	ID    uint64
	Score float64
	// Lang is the language the chunk's text was analysed in (detected as
	// it was added), so that what reads it next analyses it alike without
	// detecting it again.
	Lang analysis.Lang
}

// addBatch is how many entries Add appends between checks whether to
// switch to the graph or compact: the steps at which an index has always
// grown, so that the same inserts build the same graph.
const addBatch = 64

// graphThreshold is the owner size from which vectors are searched through
// the HNSW graph instead of scanned. BenchmarkVectorSearch at 384
// dimensions puts the crossover between 2,000 vectors (scan and graph both
// ~0.2 ms) and 5,000 (scan 2–3× slower); below it the scan is as fast, exact,
// and costs nothing to build.
const graphThreshold = 2048

// compactMinDead is the fewest deleted slots worth a rebuild.
const compactMinDead = 1024

// OwnerIndex is the index of one owner. It is safe for concurrent use, and
// searches never wait for writers.
//
// Versions: a search loads the current view, an immutable record of one
// version (how many slots it covers, its epoch, BM25 totals, the graph's
// entry point) and reads only what that view covers, taking no lock. The
// storage under the views is shared and append-only (see slots.go): a
// writer appends new entries past the published slot count, marks deleted
// slots with the epoch of the next version (a view sees a slot deleted only
// from that epoch on), links new nodes into the graph with atomic stores,
// and then publishes a new view with one atomic store. Lexical docs are
// the same slots, and the term dictionary and posting lists are read
// without locks too (see lexicon). So no version is ever copied: memory is
// one set of vectors, one graph and one inverted index, plus deleted slots
// until compaction.
//
// Writers are serialised by mu, which searches never take. Each Add or
// Delete publishes on return, unless it runs inside Commit, which publishes
// everything done during it as one version: a search sees a replaced
// document's old chunks or its new ones, never both or neither.
//
// Compaction (when half the slots are deleted) and the switch from scanning
// to the graph build a new generation beside the current one, under mu;
// searches keep reading the old generation until the new one is published.
type OwnerIndex struct {
	model string
	dim   int
	opts  Options // made with; the snapshots it reads and writes too

	current atomic.Pointer[view]

	mu       sync.Mutex // writers only
	gen      *generation
	slotOf   map[uint64]uint32 // live entry -> slot in gen
	docOf    map[string]uint32 // live document -> ordinal in gen; nil until docIndex makes it
	epoch    uint64            // the current view's
	live     int               // entries, as of the writer's last change
	dead     int               // deleted slots in gen
	totalLen uint64            // sum of live doc lengths
	lex      lexStats          // head lengths and languages of live docs
	open     int               // Commit calls running
	idle     *sync.Cond        // on mu, when open falls to 0; nil until a save waits for it
	changed  bool              // since the current view was published
	// graphFrom is the size from which vectors go through the graph:
	// graphThreshold, but tests lower it to exercise the graph on few
	// entries.
	graphFrom int
	// efConstruction is the candidate list of the graph's inserts (see
	// Options.EfConstruction).
	efConstruction int
	// scanAllowedMax is the largest allowed set a filtered search scans:
	// filterScanMax, but tests lower it to exercise the filtered graph walk.
	scanAllowedMax int
	// tuning holds the choices of the search's paths that tests and
	// benchmarks change on one index (see tuning); views read it.
	tuning *tuning
	// hooks run at moments of a save: tests change the index then, as
	// writers would.
	hooks saveHooks

	// skippedSegment is why the segment beside the snapshot the index
	// was read from was left out (see SkippedSegment).
	skippedSegment error

	// filters are the sets filters allowed, kept (see allowcache.go).
	filters keptFilters

	// saving is held by a save (see Save): one at a time. since, while
	// a whole snapshot is written, marks the slots the writer deletes or
	// relinks meanwhile (see wholeWrite).
	saving sync.Mutex
	since  touchedSet
}

// New returns an empty index for vectors of dim dimensions from model,
// made with o.
func (o Options) New(model string, dim int) *OwnerIndex {
	x := &OwnerIndex{
		model: model, dim: dim,
		opts:           o,
		gen:            newGeneration(dim, nil, o.Vectors),
		slotOf:         make(map[uint64]uint32),
		docOf:          make(map[string]uint32),
		graphFrom:      graphThreshold,
		efConstruction: o.efConstruction(model),
		scanAllowedMax: filterScanMax,
		tuning:         defaultTuning(),
	}
	x.publish()
	return x
}

// Model names the embedder the vectors came from; vectors of another model
// must not be added.
func (x *OwnerIndex) Model() string { return x.model }

// Dim is the length of every vector in the index.
func (x *OwnerIndex) Dim() int { return x.dim }

// analysed is an entry with its text already turned into terms, so that
// the costly analysis happens outside the writer lock.
type analysed struct {
	Entry
	counts  []tally[termKey]
	length  uint32 // of the text, in terms
	lang    analysis.Lang
	headLen uint32
}

// Add inserts entries; an entry whose ID is already present replaces it. A
// vector of the wrong length fails the whole call before anything changes.
func (x *OwnerIndex) Add(entries ...Entry) error {
	a, err := x.Analyse(entries...)
	if err != nil {
		return err
	}
	return x.AddAnalysed(a)
}

// Analysed is entries analysed into terms by Analyse, to be added by
// AddAnalysed.
type Analysed struct {
	entries []analysed
	dim     int // of the vectors
}

// Analyse does the part of Add that needs no lock and no state of the
// index, and is most of its work for short texts: checking the vectors'
// length and analysing the texts into terms. A writer that adds in turn
// with others (ingest's groups of documents, a catch-up reading batches
// ahead) analyses beside them, and only AddAnalysed takes turns.
func (x *OwnerIndex) Analyse(entries ...Entry) (Analysed, error) {
	for _, e := range entries {
		if len(e.Vector) != x.dim {
			return Analysed{}, fmt.Errorf("index: add %d: vector has %d dimensions, index has %d", e.ID, len(e.Vector), x.dim)
		}
	}
	prepared := make([]analysed, len(entries))
	var counter termCounter
	for i, e := range entries {
		prepared[i] = counter.analyse(e)
	}
	return Analysed{prepared, x.dim}, nil
}

// AddAnalysed adds the entries of each of as, in order, as Add does. It
// refuses them all when one was analysed for an index of vectors of
// another length.
func (x *OwnerIndex) AddAnalysed(as ...Analysed) error {
	for _, a := range as {
		if len(a.entries) > 0 && a.dim != x.dim {
			return fmt.Errorf("index: add: entries analysed for vectors of %d dimensions, index has %d", a.dim, x.dim)
		}
	}
	var prepared []analysed
	if len(as) == 1 {
		prepared = as[0].entries
	} else {
		for _, a := range as {
			prepared = append(prepared, a.entries...)
		}
	}
	added := len(prepared)
	x.mu.Lock()
	defer x.mu.Unlock()
	var unlinked []uint32 // slots of gen not yet in its graph
	for len(prepared) > 0 {
		batch := prepared[:min(len(prepared), addBatch)]
		prepared = prepared[len(batch):]
		for _, e := range batch {
			x.remove(e.ID)
			s := x.gen.appendSlot(e.ID, e.Vector, e.length)
			x.gen.indexTerms(s, e.counts)
			x.gen.setLex(s, e.lang, e.headLen)
			x.lex.add(e.lang, e.headLen, 1)
			x.attachDoc(x.gen, s, e.Doc)
			x.slotOf[e.ID] = s
			x.live++
			x.totalLen += uint64(e.length)
			if !zeroVector(e.Vector) {
				unlinked = append(unlinked, s)
			}
		}
		// A rebuild indexes every slot it copies, unlinked ones too.
		switch {
		case x.gen.graph == nil && x.live >= x.graphFrom:
			x.rebuild()
			unlinked = unlinked[:0]
		case x.gen.graph == nil:
			unlinked = unlinked[:0] // a scan needs no links
		case x.maybeCompact():
			unlinked = unlinked[:0]
		}
	}
	// Linking the whole call at once (inserting in slot order, as batch
	// by batch would) gives the parallel insert the most work to share.
	if x.gen.graph != nil {
		x.gen.graph.insert(x.gen.scope(), unlinked)
	}
	x.changed = x.changed || added > 0
	x.publishUnlessOpen()
	return nil
}

// Delete removes ids from all future results; unknown ids are ignored.
func (x *OwnerIndex) Delete(ids ...uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		if x.remove(id) {
			x.changed = true
		}
	}
	x.maybeCompact()
	x.publishUnlessOpen()
}

// Commit runs fn and publishes the Adds and Deletes made on x while it
// runs as one version: searches see all of them or none, and until fn
// returns they see the version before. Changes made by other goroutines
// meanwhile join the same version. fn's changes are published even when it
// fails: they are already in the index, as they were in the store.
func (x *OwnerIndex) Commit(fn func() error) error {
	x.mu.Lock()
	x.open++
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		x.open--
		x.publishUnlessOpen()
		if x.open == 0 && x.idle != nil {
			x.idle.Broadcast()
		}
		x.mu.Unlock()
	}()
	return fn()
}

// remove marks id's slot deleted from the next version on; it reports
// whether id was present.
func (x *OwnerIndex) remove(id uint64) bool {
	s, ok := x.slotOf[id]
	if !ok {
		return false
	}
	delete(x.slotOf, id)
	x.gen.pages.deadAt(s).Store(x.epoch + 1)
	x.gen.dead.add(s)
	if f := x.gen.file; f != nil {
		f.touched.mark(s)
	}
	x.since.mark(s)
	x.detachDoc(s)
	x.live--
	x.dead++
	x.totalLen -= uint64(x.gen.pages.docLen(s))
	x.lex.add(x.gen.pages.slotLang(s), x.gen.pages.headLen(s), -1)
	return true
}

// maybeCompact rebuilds once deleted slots fill half the generation, and
// reports whether it did. Deleted slots cost memory, a graph search wades
// through them, and the lexical scorer skips their postings; rebuilding at
// a fixed fraction keeps the cost amortised O(1) per delete.
func (x *OwnerIndex) maybeCompact() bool {
	if x.dead >= compactMinDead && 2*x.dead >= int(x.gen.n) {
		x.rebuild()
		return true
	}
	return false
}

// rebuild copies the live entries, in slot order, into a new generation
// with the vector search their number calls for, and makes it the
// writer's. Searches go on reading the old generation until the next
// publish; the old one is dropped when no view refers to it.
func (x *OwnerIndex) rebuild() {
	old := x.gen
	var graph *hnsw
	if x.live >= x.graphFrom {
		graph = newHNSW(hnswSeed, x.efConstruction)
	}
	gen := newGeneration(x.dim, graph, x.opts.Vectors)
	renum := make([]uint32, old.n) // old slot -> new slot, for live slots
	x.docOf = map[string]uint32{}  // documents are renumbered as their slots are copied
	for s := range old.n {
		if old.pages.deadAt(s).Load() != 0 {
			continue
		}
		renum[s] = gen.appendSlot(old.pages.id(s), old.pages.vec(s), old.pages.docLen(s))
		gen.setLex(renum[s], old.pages.slotLang(s), old.pages.headLen(s))
		if o, ok := old.pages.slotDoc(s); ok {
			x.attachDoc(gen, renum[s], old.docs.doc(o))
		}
	}
	// Postings are renumbered list by list; renumbering keeps slot order,
	// so every list stays sorted. Terms left with no live doc are dropped.
	old.lex.each(func(k termKey, base, added []posting) {
		var nt *termPostings
		for _, list := range [2][]posting{base, added} {
			for _, p := range list {
				if old.pages.deadAt(p.doc).Load() != 0 {
					continue
				}
				if nt == nil {
					nt = gen.lex.termFor(k)
				}
				gen.lex.stage(nt, posting{renum[p.doc], p.tf})
			}
		}
	})
	for id, s := range x.slotOf {
		x.slotOf[id] = renum[s]
	}
	x.gen, x.dead, x.changed = gen, 0, true
	if graph != nil {
		slots := make([]uint32, 0, gen.n)
		for s := range gen.n {
			if !zeroVector(gen.pages.vec(s)) {
				slots = append(slots, s)
			}
		}
		graph.insert(gen.scope(), slots)
	}
}

// zeroVector reports whether v is all zeros: the vector of a chunk indexed
// before its embedding exists (found by its words only, until the chunk
// is indexed again with its vector). Such a slot is left out of the
// graph: linked, it would be as near to every query as to any other node
// and fill neighbour lists with useless links until the next compaction.
func zeroVector(v []float32) bool {
	for _, f := range v {
		if f != 0 {
			return false
		}
	}
	return true
}

// publishUnlessOpen publishes the writer's changes, unless a Commit is
// running: then its end publishes them. The caller holds mu.
func (x *OwnerIndex) publishUnlessOpen() {
	if x.open == 0 && x.changed {
		x.publish()
	}
}

// publish makes the writer's state the current view. Deletes were marked
// with epoch+1, so this view is the first not to see them. The caller
// holds mu.
func (x *OwnerIndex) publish() {
	g := x.gen
	g.lex.flush()
	x.epoch++
	v := &view{
		scope:      scope{pages: g.pages, n: g.n, epoch: x.epoch},
		gen:        g,
		docs:       docScope{pages: g.docs, n: g.nDocs},
		superseded: make(chan struct{}),
		live:       x.live,
		dead:       x.dead,
		totalLen:   x.totalLen,
		lex:        x.lex,
		langs:      g.langs,
		deleted:    g.dead.publish(),
		entry:      noNode,
		tuning:     x.tuning,
	}
	if g.graph != nil {
		v.entry, v.maxLevel = g.graph.entry, g.graph.maxLevel
	}
	old := x.current.Swap(v)
	x.changed = false
	if old != nil {
		close(old.superseded)
	}
}

// Has reports whether id is in the index as its writers see it: including
// changes of a Commit still running. It waits for a running Add or Delete.
func (x *OwnerIndex) Has(id uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.slotOf[id]
	return ok
}

// IDs returns every ID in the index, as Has sees it, in ascending order.
func (x *OwnerIndex) IDs() []uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	// The slots not deleted are the entries, in the order they were
	// added: read in slot order (not from the map's random order), the
	// ids need little sorting, which at a million is a restart's 0.1 s.
	ids := make([]uint64, 0, len(x.slotOf))
	g := x.gen
	for s := range g.n {
		if g.pages.deadAt(s).Load() == 0 {
			ids = append(ids, g.pages.id(s))
		}
	}
	slices.Sort(ids)
	return ids
}

// Len is the number of entries searches currently see.
func (x *OwnerIndex) Len() int {
	return x.current.Load().live
}

// WithoutVector returns the IDs of the entries added with a zero vector:
// chunks found by their words only until their vector comes (see
// zeroVector), in no particular order. Their codes' scale is zero, so this
// reads four bytes an entry, not its vector.
func (x *OwnerIndex) WithoutVector() []uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	var ids []uint64
	for id, s := range x.slotOf {
		if x.gen.pages.code(s).scale == 0 {
			ids = append(ids, id)
		}
	}
	return ids
}
