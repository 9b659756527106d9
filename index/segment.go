package index

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"sync/atomic"

	"github.com/docsift/docsift/analysis"
)

// Segments. A snapshot is rewritten whole, and at a million chunks that is
// gigabytes for every few thousand chunks added. A segment, written beside
// the snapshot (path + ".seg"), holds only what changed since it: the
// slots added (their IDs, vectors, lengths, language, document, graph
// links and postings), the documents added, and for the snapshot's own
// slots those deleted since or whose graph links new nodes rewrote. Each
// segment holds everything since the snapshot, so there is at most one
// and it replaces the last; ReadSnapshot loads the snapshot in place and
// applies its segment into the heap, which holds the same changes in a
// running index (see moveOnto). Save writes a segment while it stays small
// against the snapshot, and the whole snapshot otherwise.
//
// A segment names its snapshot by the snapshot's checksum, size and slot
// count, so a segment of an earlier snapshot (a crash between renaming a
// new snapshot and removing the old segment) is not applied to a later
// one. It is checked as a snapshot is, checksum first, and one that fails
// is left out: the index is then the snapshot's and the caller catches up
// from the store, as after any crash.
//
// Layout: magic, version, the snapshot's checksum u32, size u64, slots u32
// and documents u32; lastSeq u64, slots n u32, the graph's entry u32 and
// top level u32; the documents added (count, then each as in a snapshot);
// the snapshot's slots changed since (count, then each: slot u32, deleted
// u8, and for a graph its layer-0 list and upper lists); each added slot
// (ID u64, deleted u8, docLen u32, headLen u32, document ref u32, language
// u8, for a graph its level u8, its vector [dim]f32, for a graph its
// lists); the terms with postings added (count u64, then each: key u64,
// count u32, postings (slot u32, tf u32)); the CRC-32C of it all.
const (
	segmentMagic   = "DSFTSEG\x00"
	segmentVersion = 1
	// segmentMaxSlots bounds the slots a segment adds before Save writes
	// the whole snapshot instead: an index holds what its segment holds
	// in the heap (about 9 KB a chunk), which a whole snapshot moves onto
	// the file. A segment is also never let grow past half its
	// snapshot's slots (segmentWorth): with the old nodes' links it
	// holds, it would then be a good part of the whole's size.
	segmentMaxSlots = 50000
)

// segmentPath is the segment of the snapshot at path.
func segmentPath(path string) string { return path + ".seg" }

// snapshotFile is what a generation read in place from a snapshot knows
// of the file, for the segments written after it.
type snapshotFile struct {
	path string
	sum  uint32 // CRC-32C, as the file ends with
	size int64
	n    uint32 // slots the file holds
	docs uint32 // documents the file holds
	// touched marks the file's slots deleted, or whose graph links were
	// rewritten, since the file was written: a segment holds them again.
	touched touchedSet
}

// touchedSet is a bit per slot of a snapshot, set by the writer (in
// parallel, during a graph insert); a nil set ignores every mark.
type touchedSet []atomic.Uint64

func newTouchedSet(n uint32) touchedSet { return make(touchedSet, (n+63)/64) }

// mark records that slot s changed; slots past the set are new ones,
// which a segment holds whole anyway.
func (t touchedSet) mark(s uint32) {
	if i := s / 64; int(i) < len(t) {
		if w := &t[i]; w.Load()&(1<<(s%64)) == 0 {
			w.Or(1 << (s % 64))
		}
	}
}

func (t touchedSet) has(s uint32) bool {
	i := s / 64
	return int(i) < len(t) && t[i].Load()&(1<<(s%64)) != 0
}

// segmentWorth reports whether a segment of n slots beside f is worth
// writing instead of the whole snapshot (see segmentMaxSlots).
func segmentWorth(f *snapshotFile, n uint32) bool {
	added := n - f.n
	return added < segmentMaxSlots && added < f.n/2
}

// Save writes the index's current version (as WriteSnapshot does) for a
// restart to find at path: as a segment beside the snapshot there when
// the index was read from that snapshot, or moved onto it, and has
// changed little since (see segmentMaxSlots); whole otherwise, which
// removes the segment. whole says which it wrote. A segment costs what
// changed since the snapshot, not what the index holds, and leaves the
// index where it is.
func (x *OwnerIndex) Save(path string, lastSeq uint64) (whole bool, err error) {
	x.mu.Lock()
	v := x.current.Load()
	f := v.gen.file
	if f == nil || f.path != path || !segmentWorth(f, v.n) {
		x.mu.Unlock()
		return true, x.WriteSnapshot(path, lastSeq)
	}
	// Holding the writer lock keeps the links and deletions still while
	// they are written; searches go on.
	defer x.mu.Unlock()
	err = writeAtomically(segmentPath(path), func(e *encoder) { v.encodeSegment(e, f, lastSeq) })
	if err != nil {
		return false, fmt.Errorf("index: write segment: %w", err)
	}
	return false, nil
}

// encodeSegment writes the view's changes since the snapshot f.
func (v *view) encodeSegment(e *encoder, f *snapshotFile, lastSeq uint64) {
	graph := v.gen.graph != nil
	e.bytes([]byte(segmentMagic))
	e.u32(segmentVersion)
	e.u32(f.sum)
	e.u64(uint64(f.size))
	e.u32(f.n)
	e.u32(f.docs)
	e.u64(lastSeq)
	e.u32(v.n)
	e.u32(v.entry)
	e.u32(uint32(v.maxLevel))

	// The documents added since, alive in the view, numbered on from
	// the file's.
	renum := make([]uint32, v.docs.n-f.docs) // ordinal-f.docs -> the segment's ordinal+1
	var alive uint32
	for o := f.docs; o < v.docs.n; o++ {
		if v.docAlive(o) {
			renum[o-f.docs] = f.docs + alive + 1
			alive++
		}
	}
	e.u32(alive)
	for o := f.docs; o < v.docs.n; o++ {
		if renum[o-f.docs] != 0 {
			encodeDoc(e, v.docs.pages.doc(o))
		}
	}

	var list [hnswM0 + 1]uint32
	lists := func(s uint32) {
		if !graph {
			return
		}
		e.u32s(v.linksWithin(s, 0, list[:]))
		for layer := 1; layer <= v.pages.level(s); layer++ {
			e.u32s(v.linksWithin(s, layer, list[:hnswM+1]))
		}
	}
	var touched uint32
	for s := range f.n {
		if f.touched.has(s) {
			touched++
		}
	}
	e.u32(touched)
	for s := range f.n {
		if f.touched.has(s) {
			e.u32(s)
			e.u8(v.deadFlag(s))
			lists(s)
		}
	}

	for s := f.n; s < v.n; s++ {
		var ref uint32
		if o, ok := v.pages.slotDoc(s); ok && v.alive(s) {
			ref = o + 1
			if o >= f.docs {
				ref = renum[o-f.docs]
			}
		}
		e.u64(v.pages.id(s))
		e.u8(v.deadFlag(s))
		e.u32(v.pages.docLen(s))
		e.u32(v.pages.headLen(s))
		e.u32(ref)
		e.u8(uint8(v.pages.slotLang(s)))
		if graph {
			e.u8(uint8(v.pages.level(s)))
		}
		e.f32s(v.pages.vec(s))
		lists(s)
	}

	// Every posting in the table is of a slot added since the file (see
	// moveOnto and applySegment).
	t := v.gen.lex.table.Load()
	var terms uint64
	for i := range t.slots {
		if p := t.slots[i].Load(); p != nil && len(p.upTo(v.n)) > 0 {
			terms++
		}
	}
	e.u64(terms)
	for i := range t.slots {
		p := t.slots[i].Load()
		if p == nil {
			continue
		}
		if ps := p.upTo(v.n); len(ps) > 0 {
			e.u64(uint64(p.key))
			e.u32(uint32(len(ps)))
			e.bytes(postingBytes(ps))
		}
	}
}

// readSegment reads the segment of the snapshot x was just read from, if
// there is one, and applies it. A segment that cannot be applied leaves x
// as the snapshot made it, or, when it failed half applied, returns the
// snapshot read again (reread): x is then not to be used.
func readSegment(x *OwnerIndex, b []byte, reread func() (*OwnerIndex, uint64, error)) (*OwnerIndex, uint64, error) {
	seq, err := x.applySegment(b)
	if err == nil {
		return x, seq, nil
	}
	y, seq, rerr := reread()
	if rerr != nil {
		return nil, 0, rerr
	}
	y.skippedSegment = fmt.Errorf("segment left out: %w", err)
	return y, seq, nil
}

// applySegment applies a segment to x, just read from its snapshot, and
// returns the segment's lastSeq. It checks every value as the snapshot's
// loader does (a search must not be sent out of bounds by a hostile file);
// an error may leave x half changed.
func (x *OwnerIndex) applySegment(b []byte) (lastSeq uint64, err error) {
	if len(b) < len(segmentMagic)+4 || string(b[:len(segmentMagic)]) != segmentMagic {
		return 0, errors.New("not a segment")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != leU32(b[len(b)-4:]) {
		return 0, errors.New("checksum mismatch")
	}
	gen := x.gen
	f := gen.file
	graph := gen.graph != nil
	d := &decoder{b: body[len(segmentMagic):]}
	if v := d.u32(); d.err == nil && v != segmentVersion {
		return 0, fmt.Errorf("unsupported segment version %d", v)
	}
	sum, size, fn, fdocs := d.u32(), int64(d.u64()), d.u32(), d.u32()
	if d.err == nil && (sum != f.sum || size != f.size || fn != f.n || fdocs != f.docs) {
		return 0, errors.New("segment of another snapshot")
	}
	lastSeq = d.u64()
	n, entry, maxLevel := d.u32(), d.u32(), int(d.u32())
	perSlot := 8 + 1 + 4 + 4 + 4 + 1 + 4*x.dim
	switch {
	case d.err != nil:
		return 0, d.err
	case n < f.n || int(n-f.n) > len(d.b)/perSlot:
		return 0, fmt.Errorf("%d slots over the snapshot's %d exceed the segment", int64(n)-int64(f.n), f.n)
	}

	nd := d.count(20)
	for range nd {
		doc, err := decodeDoc(d)
		if err != nil {
			return 0, err
		}
		gen.adoptDoc(doc)
	}

	readLists := func(s uint32) error {
		if !graph {
			return nil
		}
		for layer := 0; layer <= gen.pages.level(s); layer++ {
			l := gen.pages.links(s, layer)
			w := d.take(4 * len(l))
			if w == nil {
				return d.err
			}
			for i := range l {
				atomic.StoreUint32(&l[i], leU32(w[4*i:]))
			}
		}
		return nil
	}
	touched := d.count(5)
	var changed []uint32
	for i := range touched {
		s := d.u32()
		dead := d.u8()
		switch {
		case d.err != nil:
			return 0, d.err
		case s >= f.n || i > 0 && s <= changed[i-1]:
			return 0, fmt.Errorf("changed slot %d out of order or range", s)
		case dead > 1:
			return 0, fmt.Errorf("slot %d: deletion mark %d", s, dead)
		}
		wasDead := gen.pages.deadAt(s).Load() != 0
		switch {
		case dead == 1 && !wasDead:
			x.remove(gen.pages.id(s))
			gen.pages.deadAt(s).Store(1)
		case dead == 0 && wasDead:
			return 0, fmt.Errorf("slot %d deleted in the snapshot, alive in its segment", s)
		}
		f.touched.mark(s)
		if err := readLists(s); err != nil {
			return 0, err
		}
		changed = append(changed, s)
	}

	vec := make([]float32, x.dim)
	for s := f.n; s < n; s++ {
		id, dead, docLen, headLen, ref, lang := d.u64(), d.u8(), d.u32(), d.u32(), d.u32(), analysis.Lang(d.u8())
		level := 0
		if graph {
			level = int(d.u8())
		}
		w := d.take(4 * x.dim)
		switch {
		case d.err != nil:
			return 0, d.err
		case dead > 1:
			return 0, fmt.Errorf("slot %d: deletion mark %d", s, dead)
		case lang >= analysis.NumLangs:
			return 0, fmt.Errorf("slot %d: unknown language %d", s, lang)
		case level > hnswMaxLevel:
			return 0, fmt.Errorf("node %d has level %d", s, level)
		case ref > gen.nDocs || dead == 1 && ref != 0:
			return 0, fmt.Errorf("slot %d names document %d of %d", s, ref, gen.nDocs)
		}
		readF32s(vec, w)
		for _, c := range vec {
			if math.IsNaN(float64(c)) || math.IsInf(float64(c), 0) {
				return 0, fmt.Errorf("slot %d: vector not finite", s)
			}
		}
		gen.appendStored(id, vec, docLen, level)
		gen.pages.setLex(s, lang, headLen)
		if err := readLists(s); err != nil {
			return 0, err
		}
		if dead == 1 {
			gen.pages.deadAt(s).Store(1)
			x.dead++
			continue
		}
		if _, dup := x.slotOf[id]; dup {
			return 0, fmt.Errorf("id %d in two live slots", id)
		}
		x.slotOf[id] = s
		x.live++
		x.totalLen += uint64(docLen)
		x.lex.add(lang, headLen, 1)
		if ref != 0 {
			gen.pages.setSlotDoc(s, ref-1)
			gen.docLive[ref-1]++
		}
	}

	terms := d.u64()
	if d.err == nil && terms > uint64(len(d.b))/20 {
		return 0, fmt.Errorf("%d terms exceed the segment", terms)
	}
	for range terms {
		k := termKey(d.u64())
		count := d.count(8)
		w := d.take(8 * count)
		if d.err != nil {
			return 0, d.err
		}
		ps := make([]posting, count, postingsCap(uint32(count)))
		prev := int64(f.n) - 1
		for i := range ps {
			ps[i] = posting{doc: leU32(w[8*i:]), tf: leU32(w[8*i+4:])}
			if int64(ps[i].doc) <= prev || ps[i].doc >= n || ps[i].tf == 0 {
				return 0, fmt.Errorf("term %x: posting for slot %d of %d with frequency %d out of order or range", k, ps[i].doc, n, ps[i].tf)
			}
			prev = int64(ps[i].doc)
		}
		if !gen.lex.adopt(k, ps) {
			return 0, fmt.Errorf("term %x listed twice", k)
		}
	}
	if len(d.b) != 0 {
		return 0, fmt.Errorf("%d trailing bytes", len(d.b))
	}

	if graph {
		if err := checkEntry(gen, entry, maxLevel); err != nil {
			return 0, err
		}
		gen.graph.entry, gen.graph.maxLevel = entry, maxLevel
		for _, s := range changed {
			if err := checkNode(gen, s); err != nil {
				return 0, err
			}
		}
		for s := f.n; s < n; s++ {
			if err := checkNode(gen, s); err != nil {
				return 0, err
			}
		}
	}
	// The documents added must each have a live slot, as the writer
	// keeps only those. (The snapshot's that lost their last were
	// deleted with it.)
	for o := f.docs; o < gen.nDocs; o++ {
		doc := gen.docs.doc(o)
		if gen.docLive[o] == 0 {
			return 0, fmt.Errorf("document %q has no live slot", doc.ID)
		}
		before := len(x.docOf)
		x.docOf[doc.ID] = o
		if len(x.docOf) == before {
			return 0, fmt.Errorf("document %q listed twice", doc.ID)
		}
	}
	x.publish()
	return lastSeq, nil
}

// adopt gives the new term k the postings ps, staged (a segment's load);
// it reports false when k has postings already.
func (l *lexicon) adopt(k termKey, ps []posting) bool {
	t := l.termFor(k)
	if t.staged != 0 || len(ps) == 0 {
		return false
	}
	t.data.Store(&ps[0])
	t.staged = uint32(len(ps))
	l.dirty = append(l.dirty, t)
	return true
}

// postingBytes is a list as snapshots and segments hold it: each
// posting's slot, then its frequency, little-endian.
func postingBytes(ps []posting) []byte {
	if littleEndian {
		return memoryOf(ps) // a posting is its doc, then its tf
	}
	b := make([]byte, 8*len(ps))
	for i, p := range ps {
		putU32(b[8*i:], p.doc)
		putU32(b[8*i+4:], p.tf)
	}
	return b
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// removeSegment removes the segment of the snapshot at path, now
// rewritten whole. One left behind (a crash before this) names the old
// snapshot and is not applied to the new one, so an error is harmless.
func removeSegment(path string) {
	os.Remove(segmentPath(path))
}

// SkippedSegment says why the segment beside the snapshot x was read from
// was left out (see segment.go), nil when it was applied or there was
// none: x is then the snapshot's alone, and the changes the segment held
// are to be caught up from the store.
func (x *OwnerIndex) SkippedSegment() error { return x.skippedSegment }
