package index

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/docsift/docsift/analysis"
)

// Snapshot version 6 is read in place. Every array the index searches
// (vectors, their int8 codes, graph links, each slot's ID, lengths,
// language, document and deletion, the terms and their postings) is
// written as the page layout holds it in memory, little-endian and aligned
// (sectionAlign), so loading a snapshot maps the file and points the
// pages at it instead of decoding and copying: an owner of a million
// chunks is searchable after a checksum and a pass of checks over the
// file, not after rebuilding gigabytes of structures, and its arrays are
// the page cache's file-backed memory, not the process's heap. Only what
// is small or irregular is decoded into the heap: the documents, the
// upper graph layers, the map from entry IDs to slots.
//
// Layout after the magic and version: analysis rules, model, dim,
// lastSeq, slots n, searcher kind (and for a graph M, entry point, top
// level), term and posting counts, the documents; then, each aligned:
// ids [n]u64, deadAt [n]u64 (1 for deleted, else 0), docLen [n]u32,
// headLen [n]u32, doc [n]u32 (document ordinal+1, 0 for none), scales
// [n]f32, lang [n]u8, for a graph levels [n]u8, vectors [n·dim]f32, codes
// [n·dim]i8, for a graph layer-0 links [n·(M0+1)]u32 and the upper layers
// of the nodes that have them, term keys ascending [terms]u64, each term's
// postings end [terms]u64, postings [postings](doc u32, tf u32). The
// CRC-32C of the whole file ends it, as in every version.
const mappedVersion = 6

// encodeMapped writes the view's version of the index in version 6, and
// returns how the file numbers the view's documents (see encodeDocTable).
// It takes no lock: it reads only what the view covers, which writers
// leave as it is (see OwnerIndex).
func (v *view) encodeMapped(e *encoder, model string, dim int, lastSeq uint64) (docRefs []uint32) {
	e.bytes([]byte(snapshotMagic))
	e.u32(mappedVersion)
	e.str(analysis.Version)
	e.str(model)
	e.u32(uint32(dim))
	e.u64(lastSeq)
	n := int(v.n)
	e.u32(v.n)
	graph := v.gen.graph != nil
	if graph {
		e.u8(kindHNSW)
		e.u32(hnswM)
		e.u32(v.entry)
		e.u32(uint32(v.maxLevel))
	} else {
		e.u8(kindExact)
	}
	added := v.addedTerms()
	var nTerms, nPostings uint64
	v.eachTerm(added, func(_ termKey, base, added []posting) {
		nTerms++
		nPostings += uint64(len(base) + len(added))
	})
	e.u64(nTerms)
	e.u64(nPostings)
	docRefs = v.encodeDocTable(e)
	ref := func(s uint32) uint32 {
		if o, ok := v.pages.slotDoc(s); ok && v.alive(s) {
			return docRefs[o]
		}
		return 0
	}

	// The arrays that are a slot's as written are written a page at a
	// time (see encoder.u64s).
	e.align()
	v.eachPage(func(pg *page, used int) { e.u64s(pg.ids[:used]) })
	e.align()
	e.words(n, 8, func(b []byte, s int) { binary.LittleEndian.PutUint64(b, uint64(v.deadFlag(uint32(s)))) })
	e.align()
	v.eachPage(func(pg *page, used int) { e.u32s(pg.docLen[:used]) })
	e.align()
	v.eachPage(func(pg *page, used int) { e.u32s(pg.headLen[:used]) })
	e.align()
	e.words(n, 4, func(b []byte, s int) { binary.LittleEndian.PutUint32(b, ref(uint32(s))) })
	e.align()
	v.eachPage(func(pg *page, used int) { e.f32s(pg.scales[:used]) })
	e.align()
	v.eachPage(func(pg *page, used int) { e.bytes(pg.lang[:used]) })
	if graph {
		e.align()
		v.eachPage(func(pg *page, used int) { e.bytes(pg.levels[:used]) })
	}
	e.align()
	v.eachPage(func(pg *page, used int) { e.f32s(pg.vecs[:used*dim]) })
	e.align()
	v.eachPage(func(pg *page, used int) {
		e.bytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(pg.codes))), used*dim))
	})
	if graph {
		e.align()
		var list [hnswM0 + 1]uint32
		for s := range v.n {
			e.u32s(v.linksWithin(s, 0, list[:hnswM0+1]))
		}
		for s := range v.n {
			for layer := 1; layer <= v.pages.level(s); layer++ {
				e.u32s(v.linksWithin(s, layer, list[:hnswM+1]))
			}
		}
	}
	e.align()
	v.eachTerm(added, func(k termKey, _, _ []posting) { e.u64(uint64(k)) })
	e.align()
	var end uint64
	v.eachTerm(added, func(_ termKey, base, added []posting) {
		end += uint64(len(base) + len(added))
		e.u64(end)
	})
	e.align()
	v.eachTerm(added, func(_ termKey, base, added []posting) {
		e.bytes(e.postingBytes(base))
		e.bytes(e.postingBytes(added))
	})
	return docRefs
}

// termRef is a term of a live lexicon's table with its postings in a
// view, for sorting by key. A snapshot goes through its terms four times;
// finding the postings of each again, in key order, which is no order in
// memory, was half of writing a million chunks' snapshot.
type termRef struct {
	key      termKey
	postings []posting
}

// addedTerms returns the terms of the table (not the base) with postings
// in the view, in key order. The writer may add terms meanwhile, or move
// the table to a larger one: those have no postings in the view, and the
// table read holds every term that has.
func (v *view) addedTerms() []termRef {
	var refs []termRef
	t := v.gen.lex.table.Load()
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil {
			if ps := e.upTo(v.n); len(ps) > 0 {
				refs = append(refs, termRef{e.key, ps})
			}
		}
	}
	slices.SortFunc(refs, func(a, b termRef) int { return cmp.Compare(a.key, b.key) })
	return refs
}

// eachTerm calls fn for every term with postings in the view, in key
// order, with its postings in the base and in the table (added).
func (v *view) eachTerm(added []termRef, fn func(k termKey, base, added []posting)) {
	var keys []uint64
	b := v.gen.lex.base
	if b != nil {
		keys = b.keys
	}
	i, j := 0, 0
	for i < len(keys) || j < len(added) {
		switch {
		case j == len(added) || i < len(keys) && keys[i] < uint64(added[j].key):
			if l := b.list(i); len(l) > 0 {
				fn(termKey(keys[i]), l, nil)
			}
			i++
		case i == len(keys) || uint64(added[j].key) < keys[i]:
			fn(added[j].key, nil, added[j].postings)
			j++
		default:
			fn(added[j].key, b.list(i), added[j].postings)
			i++
			j++
		}
	}
}

// encodeDocTable writes the documents alive in the view, and returns how
// the file numbers each of the view's: its ordinal there + 1, 0 for one
// not written.
func (v *view) encodeDocTable(e *encoder) []uint32 {
	renum := make([]uint32, v.docs.n) // our ordinal -> the file's+1
	var alive uint32
	for o := range v.docs.n {
		if v.docAlive(o) {
			alive++
			renum[o] = alive
		}
	}
	e.u32(alive)
	for o := range v.docs.n {
		if renum[o] != 0 {
			encodeDoc(e, v.docs.pages.doc(o))
		}
	}
	return renum
}

// loadMapped builds an index over a version 6 snapshot in place (see
// mappedVersion), its maps sized for more entries to come (a segment's);
// file is the file m maps, which the lexicon's check reads. The caller
// checks the checksum; everything else is checked here, before the index
// is returned, so that a hostile file can make no search read out of
// bounds. A file this process checked before (see ReadSnapshotAfter) is
// not checked again where that costs a pass over it: its lexicon and
// its graph.
func (o Options) loadMapped(m *mapping, file io.ReaderAt, more int, checked bool) (x *OwnerIndex, lastSeq uint64, err error) {
	if !littleEndian {
		return nil, 0, fmt.Errorf("version %d snapshots are read in place, which needs a little-endian machine", mappedVersion)
	}
	d := &decoder{b: m.b[len(snapshotMagic) : len(m.b)-4], off: len(snapshotMagic)}
	if v := d.u32(); d.err == nil && v != mappedVersion {
		return nil, 0, fmt.Errorf("unsupported version %d", v)
	}
	if rules := d.str(); d.err == nil && rules != analysis.Version {
		return nil, 0, fmt.Errorf("%w: terms analysed by analysis rules %q, not the current %q", ErrOtherVersion, rules, analysis.Version)
	}
	model := d.str()
	dim := int(d.u32())
	lastSeq = d.u64()
	n := int(d.u32())
	kind := d.u8()
	graph := kind == kindHNSW
	var entry uint32
	var maxLevel int
	switch {
	case d.err != nil:
		return nil, 0, d.err
	case dim > maxSnapshotDim:
		return nil, 0, fmt.Errorf("dimension %d out of range", dim)
	case graph:
		if mm := d.u32(); d.err == nil && mm != hnswM {
			return nil, 0, fmt.Errorf("graph built with M=%d, this build uses %d", mm, hnswM)
		}
		entry, maxLevel = d.u32(), int(d.u32())
	case kind != kindExact:
		return nil, 0, fmt.Errorf("unknown vector searcher kind %d", kind)
	}
	nTerms, nPostings := d.u64(), d.u64()
	if d.err == nil && (nTerms > uint64(len(d.b))/16 || nPostings > uint64(len(d.b))/8 || n > len(d.b)/(8+8+4+4+4+4+1)) {
		return nil, 0, fmt.Errorf("counts of %d slots, %d terms and %d postings exceed the file", n, nTerms, nPostings)
	}
	x = o.New(model, dim)
	docs, err := decodeDocTable(d, x)
	if err != nil {
		return nil, 0, err
	}
	x.slotOf = make(map[uint64]uint32, n+more)
	x.docOf = nil // made at the first write (see docIndex)

	ids := mappedArray[uint64](d, n)
	dead := mappedArray[uint64](d, n)
	docLen := mappedArray[uint32](d, n)
	headLen := mappedArray[uint32](d, n)
	doc := mappedArray[uint32](d, n)
	scales := mappedArray[float32](d, n)
	lang := mappedArray[uint8](d, n)
	var levels []uint8
	if graph {
		levels = mappedArray[uint8](d, n)
	}
	if d.err == nil && dim > 0 && n > len(d.b)/(5*dim) {
		return nil, 0, fmt.Errorf("%d vectors of %d dimensions exceed the file", n, dim)
	}
	vecs := mappedArray[float32](d, n*dim)
	codes := mappedArray[int8](d, n*dim)
	var links0 []uint32
	if graph {
		links0 = mappedArray[uint32](d, n*(hnswM0+1))
	}
	// The upper graph layers, as one block (each node's lists are read
	// out of it below), then the lexicon: known now, its check runs
	// beside the rest of the load's.
	var upper []byte
	if graph && d.err == nil {
		words := 0
		for s, lvl := range levels {
			if lvl > hnswMaxLevel {
				return nil, 0, fmt.Errorf("node %d has level %d", s, lvl)
			}
			words += int(lvl) * (hnswM + 1)
		}
		if words > len(d.b)/4 {
			return nil, 0, fmt.Errorf("upper graph layers of %d links exceed the file", words)
		}
		upper = d.take(4 * words)
	}
	lex := &frozenLexicon{src: m}
	lexBytes := d.b // the lexicon is the rest of the file
	lex.keys = mappedArray[uint64](d, int(nTerms))
	lex.ends = mappedArray[uint64](d, int(nTerms))
	lex.postings = mappedArray[posting](d, int(nPostings))
	if d.err != nil {
		return nil, 0, d.err
	}
	if len(d.b) != 0 {
		return nil, 0, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	// The lexicon's and the graph's checks read their parts of the file
	// while the checksum reads from the start: each gets read-ahead
	// workers of its own (see readAhead), or would wait on one fault at a
	// time.
	lexOK := make(chan error, 1)
	if checked {
		lexOK <- nil
	} else {
		stopLexReadAhead := readAhead(lexBytes, adviseWillNeed)
		go func() {
			err := lex.check(uint32(n), file)
			stopLexReadAhead() // before the load can return and drop the mapping
			lexOK <- err
		}()
		defer readAhead(memoryOf(links0), adviseWillNeed)()
	}
	defer func() {
		if lerr := <-lexOK; lerr != nil && err == nil {
			x, lastSeq, err = nil, 0, lerr
		}
	}()

	gen := x.gen
	if graph {
		gen.graph = newHNSW(uint64(n), x.efConstruction) // seeded so levels drawn after a load differ from those before
		gen.graph.entry, gen.graph.maxLevel = entry, maxLevel
	}
	// Every page is read in place, the last too when it is not full: it
	// has room only for the slots it holds, and the writer copies it to
	// the heap before it appends to it (see generation.ownLast), so that
	// an owner that gains nothing (most of a server's customers, most of
	// the time) holds none of it in the heap nor a scratch file of its
	// vectors, which is one more memory map of the process.
	for p, start := 0, 0; start < n; p++ {
		end := min(start+pageSlots(p), n)
		size := end - start
		pg := &page{
			dim:     dim,
			vecs:    vecs[start*dim : end*dim : end*dim],
			codes:   codes[start*dim : end*dim : end*dim],
			scales:  scales[start:end:end],
			ids:     ids[start:end:end],
			docLen:  docLen[start:end:end],
			lang:    lang[start:end:end],
			headLen: headLen[start:end:end],
			doc:     doc[start:end:end],
			deadAt:  unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(&dead[start])), size),
			src:     m,
		}
		if graph {
			pg.levels = levels[start:end:end]
			pg.links0 = links0[start*(hnswM0+1) : end*(hnswM0+1) : end*(hnswM0+1)]
			pg.upper = make([][]uint32, size)
		}
		gen.pages = append(gen.pages, pg)
		start = end
	}
	gen.n = uint32(n)

	// Slots: deletions, IDs, languages, documents.
	for s := range n {
		if analysis.Lang(lang[s]) >= analysis.NumLangs {
			return nil, 0, fmt.Errorf("slot %d: unknown language %d", s, lang[s])
		}
		if int(doc[s]) > docs {
			return nil, 0, fmt.Errorf("slot %d names document %d of %d", s, doc[s], docs)
		}
		gen.langs.add(uint32(s), analysis.Lang(lang[s]))
		switch dead[s] {
		case 1:
			x.dead++
			gen.dead.add(uint32(s))
			continue
		case 0:
		default:
			return nil, 0, fmt.Errorf("slot %d: deletion mark %d", s, dead[s])
		}
		before := len(x.slotOf)
		x.slotOf[ids[s]] = uint32(s)
		if len(x.slotOf) == before {
			return nil, 0, fmt.Errorf("id %d in two live slots", ids[s])
		}
		x.live++
		x.totalLen += uint64(docLen[s])
		x.lex.add(analysis.Lang(lang[s]), headLen[s], 1)
		if doc[s] != 0 {
			gen.docLive[doc[s]-1]++
		}
	}
	for o := range gen.nDocs {
		if gen.docLive[o] == 0 {
			return nil, 0, fmt.Errorf("document %q has no live slot", gen.docs.doc(o).ID)
		}
	}

	if graph {
		for s := range n {
			if lvl := int(levels[s]); lvl > 0 {
				words := lvl * (hnswM + 1)
				p, off := pageOf(uint32(s))
				gen.pages[p].upper[off] = make([]uint32, words)
				readU32s(gen.pages[p].upper[off], upper[:4*words])
				upper = upper[4*words:]
			}
		}
		if !checked {
			if err := checkGraph(gen, entry, maxLevel); err != nil {
				return nil, 0, err
			}
		}
	}
	gen.lex.base = lex
	gen.file = newSnapshotFile(leU32(m.b[len(m.b)-4:]), int64(len(m.b)), uint32(n), uint32(docs))
	if graph {
		gen.graph.touched = gen.file.touched
	}
	x.publish()
	return x, lastSeq, nil
}

// mappedArray takes the next aligned array of n values of T from d, in
// place.
func mappedArray[T any](d *decoder, n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	d.align()
	if d.err == nil && (n < 0 || n > len(d.b)/size) {
		d.err = fmt.Errorf("array of %d values of %d bytes exceeds the file", n, size)
	}
	b := d.take(n * size)
	if d.err != nil {
		return nil
	}
	return castSlice[T](b, n)
}

// decodeDocTable reads the documents encodeDocTable wrote into x's
// generation, in the file's order, so that the slots' references are
// ordinals+1 as the file numbers them; it returns how many there are.
//
// The documents are not put in x.docOf, which only writers use: at a
// million documents that map was a fifth of the load (see docIndex).
func decodeDocTable(d *decoder, x *OwnerIndex) (int, error) {
	gen := x.gen
	nd := d.count(20)
	if d.err != nil {
		return 0, d.err
	}
	gen.docLive = slices.Grow(gen.docLive, nd)
	// The documents, and their IDs' bytes, are made in blocks rather than
	// one by one: a million-document owner's load would otherwise spend
	// much of its time allocating two million small objects (and the
	// collector marking them). A block lives as long as any document in
	// it, which a deleted document's few dozen bytes may outlast until
	// the generation is rebuilt.
	block := make([]Document, nd)
	var ids stringBlock
	for i := range nd {
		doc := &block[i]
		if err := decodeDocInto(d, doc, &ids); err != nil {
			return 0, err
		}
		gen.adoptDoc(doc)
	}
	return nd, nil
}

// encodeDoc writes a document as snapshots and segments hold it: ID,
// creation time (seconds, nanoseconds), metadata (count, then pairs).
func encodeDoc(e *encoder, d *Document) {
	e.str(d.ID)
	e.u64(uint64(d.CreatedAt.Unix()))
	e.u32(uint32(d.CreatedAt.Nanosecond()))
	e.u32(uint32(len(d.Metadata)))
	for k, val := range d.Metadata {
		e.str(k)
		e.str(val)
	}
}

// decodeDoc reads what encodeDoc wrote.
func decodeDoc(d *decoder) (*Document, error) {
	doc := &Document{}
	if err := decodeDocInto(d, doc, nil); err != nil {
		return nil, err
	}
	return doc, nil
}

// decodeDocInto is decodeDoc into doc, its ID's bytes copied into ids
// when that is not nil.
func decodeDocInto(d *decoder, doc *Document, ids *stringBlock) error {
	if ids != nil {
		doc.ID = ids.copy(d.take(int(d.u32())))
	} else {
		doc.ID = d.str()
	}
	sec, nsec := int64(d.u64()), d.u32()
	if d.err == nil && nsec >= 1e9 {
		return fmt.Errorf("document %q: bad creation time", doc.ID)
	}
	doc.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
	nm := d.count(8)
	if nm > 0 {
		doc.Metadata = make(map[string]string, nm)
	}
	for range nm {
		k := d.str()
		doc.Metadata[k] = d.str()
	}
	return d.err
}

// stringBlock makes strings by copying their bytes into shared blocks,
// one allocation for many short strings. The blocks double from
// stringBlockMin to stringBlockMax: a customer's owner of a hundred
// documents needs a few kilobytes, and blocks of the largest size from the
// first were 64 KB an owner, most of the heap of a thousand such owners.
type stringBlock struct{ buf []byte }

const (
	stringBlockMin = 1 << 10
	stringBlockMax = 64 << 10
)

func (sb *stringBlock) copy(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(sb.buf)-len(sb.buf) {
		size := min(max(2*cap(sb.buf), stringBlockMin), stringBlockMax)
		sb.buf = make([]byte, 0, max(size, len(b)))
	}
	start := len(sb.buf)
	sb.buf = append(sb.buf, b...)
	return unsafe.String(&sb.buf[start], len(b))
}

// check checks the lexicon read from a file of n slots: keys strictly
// ascending, ends within the postings and not decreasing, every list in
// strictly ascending slot order below n with a frequency. It reads the
// lexicon from file, the file f.src maps, a block at a time, rather than
// through the mapping, for the reason checksumOf does: at a million
// chunks the pass over the mapping's 1.8 GB was a third of a restart's
// CPU, most of it in faulting pages in that searches touch few of.
func (f *frozenLexicon) check(n uint32, file io.ReaderAt) error {
	keys := arrayIn(file, f.src, f.keys)
	ends := arrayIn(file, f.src, f.ends)
	postings := arrayIn(file, f.src, f.postings)
	var (
		list  []posting // the block's postings not yet checked
		start uint64    // postings checked
		last  uint64    // the previous key
	)
	for i := 0; i < len(f.keys); {
		kb, err := keys.next()
		if err != nil {
			return err
		}
		eb, err := ends.next()
		if err != nil {
			return err
		}
		for j, k := range kb {
			if i+j > 0 && k <= last {
				return fmt.Errorf("term keys out of order at %d", i+j)
			}
			last = k
			end := eb[j]
			if end < start || end > uint64(len(f.postings)) {
				return fmt.Errorf("term %x: postings end %d out of range", k, end)
			}
			prev := int64(-1)
			for start < end {
				if len(list) == 0 {
					if list, err = postings.next(); err != nil {
						return err
					}
				}
				take := min(end-start, uint64(len(list)))
				for _, p := range list[:take] {
					if int64(p.doc) <= prev || p.doc >= n || p.tf == 0 {
						return fmt.Errorf("term %x: posting for slot %d of %d with frequency %d out of order or range", k, p.doc, n, p.tf)
					}
					prev = int64(p.doc)
				}
				list, start = list[take:], start+take
			}
		}
		i += len(kb)
	}
	if start != uint64(len(f.postings)) {
		return fmt.Errorf("%d postings, %d listed", len(f.postings), start)
	}
	return nil
}

// fileArray reads from a file, a block at a time, an array a mapping of
// it holds.
type fileArray[T any] struct {
	file io.ReaderAt
	off  int64 // of the next block
	left int   // values not yet read
	buf  []T
}

// fileArrayBlock is the bytes of a fileArray's blocks: large enough that
// the reads cost little beside the copies, small enough to stay in the
// processor's cache.
const fileArrayBlock = 256 << 10

// arrayIn is the fileArray of v, an array m maps, in file, the file m
// maps.
func arrayIn[T any](file io.ReaderAt, m *mapping, v []T) *fileArray[T] {
	a := &fileArray[T]{file: file, left: len(v)}
	if len(v) > 0 {
		a.off = int64(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - uintptr(unsafe.Pointer(unsafe.SliceData(m.b))))
		a.buf = make([]T, min(len(v), fileArrayBlock/int(unsafe.Sizeof(v[0]))))
	}
	return a
}

// next returns the next block of values, which the call after it
// overwrites; at the end it returns none.
func (a *fileArray[T]) next() ([]T, error) {
	block := a.buf[:min(a.left, len(a.buf))]
	b := memoryOf(block)
	if read, err := a.file.ReadAt(b, a.off); read < len(b) { // a full read may come with io.EOF
		return nil, fmt.Errorf("lexicon not read: %w", err)
	}
	a.off += int64(len(b))
	a.left -= len(block)
	return block, nil
}
