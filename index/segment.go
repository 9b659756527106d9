package index

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"math"
	"os"
	"sort"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/docsift/docsift/analysis"
)

// Segments. A snapshot is rewritten whole, and at a million chunks that is
// gigabytes for every few thousand chunks added. A segment, written beside
// the snapshot (path + ".seg1", ".seg2", …), holds only what changed since
// the segment before it, or the snapshot: the slots added (their IDs,
// vectors, lengths, language, document, graph links and postings), the
// documents added, and for the slots before those the ones deleted since
// or whose graph links new nodes rewrote. ReadSnapshot loads the snapshot
// in place and applies its segments in order into the heap, which holds
// the same changes in a running index (see moveOnto). Save appends a
// segment until the slots added since the snapshot reach segmentLimit,
// and writes the whole snapshot then, which removes the segments.
//
// A segment names its snapshot (checksum, size, slots, documents), its
// place in the chain and the checksum of the segment before it, so a
// segment of an earlier snapshot (a crash between renaming a new
// snapshot and removing the old segments) is not applied to a later one,
// nor one out of turn. It is checked as a snapshot is, checksum first;
// from one that fails on, the segments are left out: the index is then
// the snapshot and the segments before, and the caller catches up from
// the store, as after any crash.
//
// Layout: magic, version; the snapshot's checksum u32, size u64, slots u32
// and documents u32; the segment's number u32 (1 for the first), the
// checksum of the one before u32 (the snapshot's for the first), the
// slots u32 and documents u32 before it; lastSeq u64, slots n u32, the
// graph's entry u32 and top level u32; the documents added (count, then
// each as in a snapshot); the terms with postings of the added slots
// (count u64, then each: key u64, count u32, postings (slot u32, tf
// u32)); the slots before it changed since the last save (count, then
// each: slot u32, deleted u8, and for a graph its layer-0 list and upper
// lists); each added slot (ID u64, deleted u8, docLen u32, headLen u32,
// document ref u32, language u8, for a graph its level u8, its vector
// [dim]f32, for a graph its lists); the CRC-32C of it all.
const (
	segmentMagic   = "DSFTSEG\x00"
	segmentVersion = 2
	// segmentMaxSlots bounds the slots added since the snapshot that
	// Save keeps in segments (see segmentLimit).
	segmentMaxSlots = 50000
)

// segmentLimit is how many slots may be added after a snapshot of n slots
// before Save writes the whole snapshot again, which moves the index onto
// the file. Segments are applied into the heap, at a load too: 50,000
// slots cost about 450 MB of heap (450 bytes a chunk at a million, over
// the 750 of the file read in place) and about 0.45 s of a restart at a
// million chunks (0.93-1.05 s for 112,000 measured) for bench scale's
// text, but 2.2-2.5 s for 40,000 chunks of text whose word pairs are nearly
// all distinct (five million terms, each inserted into the heap's
// lexicon). A restart searches the snapshot alone while large segments
// are applied (see ingest's preview); reading segments in place, as the
// snapshot is, would bound the wait for the whole index. A small
// snapshot is rewritten once the slots added reach a quarter of its own:
// an owner holds up to that share of itself in the heap, and at half the
// highest memory of an ingest over 3,000 customers was 1.32-1.34 GB where
// it is 0.98-1.01 at a quarter (of one owner's first 100,000 chunks,
// 0.69-0.74 against 0.51-0.52), for 13% more written to disk (112 KB a
// chunk, most of it the store's) and no more CPU. Past 200,000 slots
// segmentMaxSlots bounds it alone, as before.
func segmentLimit(n uint32) uint32 {
	return min(segmentMaxSlots, n/4)
}

// segmentPath is the k-th segment of the snapshot at path.
func segmentPath(path string, k int) string { return fmt.Sprintf("%s.seg%d", path, k) }

// removeSegments removes the segments of the snapshot at path (written
// whole, or about to start a new chain). Segments are numbered from 1
// with no gap, as they are read; they are found by name, not by listing
// the directory, which holds every owner's snapshot (a listing a save
// made a stop with 5,000 customers take 20 s), and removed from the last,
// so that a crash midway leaves the rest numbered so for the next
// removal. One left behind names another snapshot or chain and is not
// applied, so an error is harmless.
func removeSegments(path string) {
	n := 0
	for {
		if _, err := os.Lstat(segmentPath(path, n+1)); err != nil {
			break
		}
		n++
	}
	for k := n; k >= 1; k-- {
		os.Remove(segmentPath(path, k))
	}
}

// snapshotFile is what a generation read in place from a snapshot knows
// of the file, and of the segments saved after it.
type snapshotFile struct {
	path string
	info os.FileInfo // the file as read and checked, when it was read
	sum  uint32      // CRC-32C, as the file ends with
	size int64
	n    uint32 // slots the file holds
	docs uint32 // documents the file holds

	// The segments: how many, the slots and documents the snapshot and
	// they hold, and the checksum of the last (the snapshot's if none).
	segments          int
	savedN, savedDocs uint32
	lastSum           uint32
	// touched marks the slots below savedN deleted, or whose graph links
	// were rewritten, since the last save: the next segment holds them
	// again.
	touched touchedSet
}

func newSnapshotFile(sum uint32, size int64, n, docs uint32) *snapshotFile {
	return &snapshotFile{sum: sum, size: size, n: n, docs: docs, savedN: n, savedDocs: docs, lastSum: sum, touched: newTouchedSet(n)}
}

// saved records a segment written (or read) with checksum sum, holding
// the slots and documents below n and docs, and starts marking afresh.
func (f *snapshotFile) saved(g *generation, sum uint32) {
	f.segments++
	f.savedN, f.savedDocs, f.lastSum = g.n, g.nDocs, sum
	f.touched = newTouchedSet(g.n)
	if g.graph != nil {
		g.graph.touched = f.touched
	}
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

// Saved says what Save wrote.
type Saved struct {
	Whole   bool  // the whole snapshot, not a segment
	Segment int   // which segment, counting from 1
	Bytes   int64 // the file's size
	// Held is how long writers waited for the save: moments at its
	// start and end, and for a whole snapshot the move onto it (see
	// SaveWrite).
	Held time.Duration
}

// add marks in t the slots o marks; those past t's are new to it.
func (t touchedSet) add(o touchedSet) {
	for i := range min(len(t), len(o)) {
		if w := o[i].Load(); w != 0 {
			t[i].Or(w)
		}
	}
}

// any reports whether t marks any slot.
func (t touchedSet) any() bool {
	for i := range t {
		if t[i].Load() != 0 {
			return true
		}
	}
	return false
}

// Save writes the index's current version (as WriteSnapshot does) for a
// restart to find at path: as the next segment of the snapshot there when
// the index was read from that snapshot, or moved onto it, and has not
// grown past segmentLimit since; whole otherwise, which removes the
// segments. A segment costs what changed since the last save, not what
// the index holds, and leaves the index where it is. While a Commit runs,
// the snapshot is written whole, as WriteSnapshot does.
func (x *OwnerIndex) Save(path string, lastSeq uint64) (Saved, error) {
	w := x.StartSave(path, lastSeq, false)
	w.Write()
	return w.Finish()
}

// A SaveWrite is a save of an index in three steps, so that writers need
// not wait while it is written: StartSave, which takes the writer lock
// for a moment, then Write, which takes no lock (or, for the whole
// snapshot, only for a moment), then Finish, which takes it for a moment
// again. Only one save of an index runs at a time, from StartSave to
// Finish, and a caller that keeps Commits out around StartSave and Finish
// lets them run during Write (see wholeWrite).
type SaveWrite interface {
	Write()
	// Finish ends the save and returns what was saved, or why nothing
	// was.
	Finish() (Saved, error)
}

// StartSave starts saving the current version of x to path, as Save
// does; whole writes the whole snapshot in any case.
func (x *OwnerIndex) StartSave(path string, lastSeq uint64, whole bool) SaveWrite {
	x.saving.Lock()
	x.mu.Lock()
	if whole || x.savesWhole(path) || x.open > 0 {
		x.mu.Unlock()
		return x.startWhole(path, lastSeq)
	}
	t := time.Now()
	defer x.mu.Unlock()
	w := x.startSegment(path, lastSeq)
	w.held = time.Since(t)
	return w
}

// segmentWrite is a segment being written while writers go on. The
// segment holds the version current at its start, and the slots changed
// up to it, whose marks it takes: writers mark those they change
// meanwhile afresh, for the next segment. Its links are read as the
// writers leave them, as a whole snapshot's are; a slot whose links a
// writer rewrites meanwhile is marked, and the next segment holds it
// again.
type segmentWrite struct {
	x       *OwnerIndex
	path    string
	lastSeq uint64
	v       *view
	f       *snapshotFile
	marks   touchedSet // the slots below f.savedN changed up to v
	k       int        // the segment's number
	sum     uint32
	err     error
	held    time.Duration
}

// startSegment starts writing the next segment of v's file. The caller
// holds saving and mu, and no Commit runs.
func (x *OwnerIndex) startSegment(path string, lastSeq uint64) *segmentWrite {
	v := x.current.Load()
	f := v.gen.file
	w := &segmentWrite{x: x, path: path, lastSeq: lastSeq, v: v, f: f, marks: f.touched, k: f.segments + 1}
	f.touched = newTouchedSet(v.n)
	if g := v.gen.graph; g != nil {
		g.touched = f.touched
	}
	return w
}

// Write writes the segment, taking no lock.
func (w *segmentWrite) Write() {
	if w.x.hooks.segmentWriteStarted != nil {
		w.x.hooks.segmentWriteStarted()
	}
	if w.k == 1 {
		removeSegments(w.path) // of an earlier chain, left by a crash
	}
	w.sum, w.err = writeAtomically(segmentPath(w.path, w.k), func(e *encoder) { w.v.encodeSegment(e, w.f, w.marks, w.lastSeq) })
	if w.err != nil {
		w.err = fmt.Errorf("index: write segment: %w", w.err)
	}
}

// Finish records the segment as the file's last, or, if it could not be
// written, gives its marks back for the next save to write.
func (w *segmentWrite) Finish() (Saved, error) {
	x, f := w.x, w.f
	defer x.saving.Unlock()
	x.mu.Lock()
	t := time.Now()
	if w.err != nil {
		f.touched.add(w.marks)
	} else {
		f.segments, f.savedN, f.savedDocs, f.lastSum = w.k, w.v.n, w.v.docs.n, w.sum
	}
	x.mu.Unlock()
	w.held += time.Since(t)
	if w.err != nil {
		return Saved{}, w.err
	}
	return Saved{Segment: w.k, Bytes: fileSize(segmentPath(w.path, w.k)), Held: w.held}, nil
}

// SavesWhole reports whether Save would now write the whole snapshot at
// path rather than a segment beside it.
func (x *OwnerIndex) SavesWhole(path string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.savesWhole(path)
}

func (x *OwnerIndex) savesWhole(path string) bool {
	v := x.current.Load()
	f := v.gen.file
	return f == nil || f.path != path || v.n-f.n >= segmentLimit(f.n)
}

// SaveWhole is WriteSnapshot, saying what it wrote as Save does.
func (x *OwnerIndex) SaveWhole(path string, lastSeq uint64) (Saved, error) {
	w := x.StartSave(path, lastSeq, true)
	w.Write()
	return w.Finish()
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// encodeSegment writes the view's changes since the last save of f:
// the slots after f's saved ones, and those of f's that marks marks.
func (v *view) encodeSegment(e *encoder, f *snapshotFile, marks touchedSet, lastSeq uint64) {
	v.encodeChanges(e, f, marks, lastSeq, f.savedDocs, func(o uint32) uint32 { return o + 1 }, v.gen.lex.tableTerms)
}

// encodeChanges is encodeSegment of a view whose documents f numbers
// otherwise (see moveOnto): firstDoc is the view's first document after
// those f.savedDocs counts, and ref gives f's number + 1 of each of the
// view's documents. terms yields, at least, every term with postings of
// the slots after f's saved ones.
func (v *view) encodeChanges(e *encoder, f *snapshotFile, marks touchedSet, lastSeq uint64, firstDoc uint32, ref func(o uint32) uint32, terms iter.Seq[*termPostings]) {
	graph := v.gen.graph != nil
	from := f.savedN
	e.bytes([]byte(segmentMagic))
	e.u32(segmentVersion)
	e.u32(f.sum)
	e.u64(uint64(f.size))
	e.u32(f.n)
	e.u32(f.docs)
	e.u32(uint32(f.segments + 1))
	e.u32(f.lastSum)
	e.u32(from)
	e.u32(f.savedDocs)
	e.u64(lastSeq)
	e.u32(v.n)
	e.u32(v.entry)
	e.u32(uint32(v.maxLevel))

	// Every document added, deleted ones too, so that a load numbers
	// them as the writer does; one with no live slot is deleted there.
	e.u32(v.docs.n - firstDoc)
	for o := firstDoc; o < v.docs.n; o++ {
		encodeDoc(e, v.docs.pages.doc(o))
	}

	// The table holds the postings of the slots added since the
	// snapshot (see moveOnto and applySegment); those of the slots added
	// since the last save end each list.
	added := func(p *termPostings) []posting {
		ps := p.upTo(v.n)
		return ps[sort.Search(len(ps), func(i int) bool { return ps[i].doc >= from }):]
	}
	var count uint64
	for p := range terms {
		if len(added(p)) > 0 {
			count++
		}
	}
	e.u64(count)
	for p := range terms {
		if ps := added(p); len(ps) > 0 {
			e.u64(uint64(p.key))
			e.u32(uint32(len(ps)))
			e.bytes(e.postingBytes(ps))
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
	for s := range from {
		if marks.has(s) {
			touched++
		}
	}
	e.u32(touched)
	for s := range from {
		if marks.has(s) {
			e.u32(s)
			e.u8(v.deadFlag(s))
			lists(s)
		}
	}

	for s := from; s < v.n; s++ {
		var r uint32
		if o, ok := v.pages.slotDoc(s); ok && v.alive(s) {
			r = ref(o)
		}
		e.u64(v.pages.id(s))
		e.u8(v.deadFlag(s))
		e.u32(v.pages.docLen(s))
		e.u32(v.pages.headLen(s))
		e.u32(r)
		e.u8(uint8(v.pages.slotLang(s)))
		if graph {
			e.u8(uint8(v.pages.level(s)))
		}
		e.f32s(v.pages.vec(s))
		lists(s)
	}
}

// segmentSlots is how many slots the segments of the snapshot at path
// add, by their headers, for sizing the index's maps before they are
// read; a hint, so no more than their sizes could hold.
func segmentSlots(path string) int {
	total := 0
	for k := 1; ; k++ {
		f, err := os.Open(segmentPath(path, k))
		if err != nil {
			return total
		}
		var h [len(segmentMagic) + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 4 + 4 + 8 + 4]byte
		_, err = io.ReadFull(f, h[:])
		st, serr := f.Stat()
		f.Close()
		if err != nil || serr != nil {
			return total
		}
		from, n := leU32(h[len(h)-20:]), leU32(h[len(h)-4:]) // then documents, lastSeq
		if n > from {
			total += int(min(int64(n-from), st.Size()/32))
		}
	}
}

// readSegments applies the segments read beside the snapshot x was just
// read from, in order. From the first that cannot be applied on, they are
// left out (see SkippedSegment); when that one failed half applied (not
// in its header), the snapshot is read again (reread) and the segments
// before it applied again, and x is not to be used.
func readSegments(x *OwnerIndex, lastSeq uint64, segs [][]byte, reread func() (*OwnerIndex, uint64, error)) (*OwnerIndex, uint64, error) {
	for k, b := range segs {
		seq, err := x.applySegment(b)
		if err == nil {
			lastSeq = seq
			continue
		}
		err = fmt.Errorf("segment %d and after left out: %w", k+1, err)
		if errors.As(err, new(unapplied)) {
			x.skippedSegment = err
			return x, lastSeq, nil
		}
		y, seq, rerr := reread()
		if rerr != nil {
			return nil, 0, rerr
		}
		for _, b := range segs[:k] {
			if seq, rerr = y.applySegment(b); rerr != nil {
				return nil, 0, fmt.Errorf("segment %d applied once, not twice: %w", k, rerr)
			}
		}
		y.skippedSegment = err
		return y, seq, nil
	}
	return x, lastSeq, nil
}

// unapplied is an error of applySegment that left the index as it was.
type unapplied struct{ error }

func (u unapplied) Unwrap() error { return u.error }

// applySegment applies the next segment of the snapshot x was read from
// and returns its lastSeq. It checks every value as the snapshot's loader
// does (a search must not be sent out of bounds by a hostile file); an
// error may leave x half changed.
func (x *OwnerIndex) applySegment(b []byte) (lastSeq uint64, err error) {
	if len(b) < len(segmentMagic)+4 || string(b[:len(segmentMagic)]) != segmentMagic {
		return 0, unapplied{errors.New("not a segment")}
	}
	body := b[:len(b)-4]
	sum := crc32.Checksum(body, castagnoli)
	if sum != leU32(b[len(b)-4:]) {
		return 0, unapplied{errors.New("checksum mismatch")}
	}
	gen := x.gen
	f := gen.file
	graph := gen.graph != nil
	d := &decoder{b: body[len(segmentMagic):]}
	if v := d.u32(); d.err == nil && v != segmentVersion {
		return 0, unapplied{fmt.Errorf("unsupported segment version %d", v)}
	}
	fsum, fsize, fn, fdocs := d.u32(), int64(d.u64()), d.u32(), d.u32()
	k, prev, from, fromDocs := int(d.u32()), d.u32(), d.u32(), d.u32()
	lastSeq = d.u64()
	n, entry, maxLevel := d.u32(), d.u32(), int(d.u32())
	perSlot := 8 + 1 + 4 + 4 + 4 + 1 + 4*x.dim
	switch {
	case d.err != nil:
		return 0, unapplied{d.err}
	case fsum != f.sum || fsize != f.size || fn != f.n || fdocs != f.docs:
		return 0, unapplied{errors.New("segment of another snapshot")}
	case k != f.segments+1 || prev != f.lastSum || from != gen.n || fromDocs != gen.nDocs:
		return 0, unapplied{fmt.Errorf("segment %d out of turn after %d", k, f.segments)}
	case n < from || int(n-from) > len(d.b)/perSlot:
		return 0, unapplied{fmt.Errorf("%d slots added to %d exceed the segment", int64(n)-int64(from), from)}
	}

	// The live documents by ID, made (see docIndex) before the
	// segment's own are added to the table.
	docOf := x.docIndex()
	nd := d.count(20)
	for range nd {
		doc, err := decodeDoc(d)
		if err != nil {
			return 0, err
		}
		gen.adoptDoc(doc)
	}

	// The postings go to the lexicon while the slots are applied: the
	// two share nothing, and at a million chunks each takes about as
	// long as the other.
	pd := *d
	terms := d.u64()
	if d.err == nil && terms > uint64(len(d.b))/20 {
		return 0, fmt.Errorf("%d terms exceed the segment", terms)
	}
	for range terms {
		d.u64()
		d.take(8 * d.count(8))
	}
	if d.err != nil {
		return 0, d.err
	}
	var postingsErr error
	postingsDone := make(chan struct{})
	go func() {
		defer close(postingsDone)
		postingsErr = applyPostings(&pd, gen.lex, from, n)
	}()
	defer func() { <-postingsDone }() // an error may return before it ends

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
			// No search has the index yet (see ReadSnapshot), so the
			// words are copied, not stored one by one atomically: at
			// a million chunks a segment rewrites most old nodes'
			// lists. Segments are read on little-endian machines only
			// (see loadMapped).
			copy(memoryOf(l), w)
		}
		return nil
	}
	touched := d.count(5)
	changed := make([]uint32, 0, touched)
	for i := range touched {
		s := d.u32()
		dead := d.u8()
		switch {
		case d.err != nil:
			return 0, d.err
		case s >= from || i > 0 && s <= changed[i-1]:
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
			return 0, fmt.Errorf("slot %d deleted before, alive in segment %d", s, k)
		}
		if err := readLists(s); err != nil {
			return 0, err
		}
		changed = append(changed, s)
	}

	vec := make([]float32, x.dim)
	for s := from; s < n; s++ {
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
		gen.setLex(s, lang, headLen)
		if err := readLists(s); err != nil {
			return 0, err
		}
		if dead == 1 {
			gen.pages.deadAt(s).Store(1)
			gen.dead.add(s)
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

	if len(d.b) != 0 {
		return 0, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if <-postingsDone; postingsErr != nil {
		return 0, postingsErr
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
		for s := from; s < n; s++ {
			if err := checkNode(gen, s); err != nil {
				return 0, err
			}
		}
	}
	// The documents added: one with a live slot is found by its ID, as
	// no other live one may be; one without is deleted, as the writer's
	// was.
	for o := fromDocs; o < gen.nDocs; o++ {
		doc := gen.docs.doc(o)
		if gen.docLive[o] == 0 {
			gen.docs.deadAt(o).Store(1)
			continue
		}
		before := len(docOf)
		docOf[doc.ID] = o
		if len(docOf) == before {
			return 0, fmt.Errorf("document %q listed twice", doc.ID)
		}
	}
	f.saved(gen, sum)
	x.publish()
	return lastSeq, nil
}

// applyPostings applies a segment's postings, which d is at, to lex:
// postings of the slots from to n.
//
// A segment holds millions of terms when its chunks' word pairs are
// mostly distinct, so the new terms' entries, and their postings, are
// made in blocks rather than one by one: a load then leaves the
// collector nothing to mark for them but the blocks.
func applyPostings(d *decoder, lex *lexicon, from, n uint32) error {
	terms := d.u64()
	entries := make([]termPostings, terms) // bounded by the segment's size (see applySegment)
	var lists postingBlock
	for i := range terms {
		key := termKey(d.u64())
		count := d.count(8)
		w := d.take(8 * count)
		if d.err != nil {
			return d.err
		}
		if count == 0 {
			return fmt.Errorf("term %x with no postings", key)
		}
		prev := int64(from) - 1
		// With room to grow as a list does, so that a term new to the
		// lexicon (most of a segment's) takes ps as it is.
		ps := lists.take(count)
		for j := range ps {
			ps[j] = posting{doc: leU32(w[8*j:]), tf: leU32(w[8*j+4:])}
			if int64(ps[j].doc) <= prev || ps[j].doc >= n || ps[j].tf == 0 {
				return fmt.Errorf("term %x: posting for slot %d of %d with frequency %d out of order or range", key, ps[j].doc, n, ps[j].tf)
			}
			prev = int64(ps[j].doc)
		}
		if !lex.extend(key, ps, &entries[i]) {
			return fmt.Errorf("term %x listed twice", key)
		}
	}
	return nil
}

// extend appends ps, postings of slots past all of term k's, to its
// postings, staged (a segment's load); it reports false when they are not
// past them. A new term takes fresh for its entry, and ps itself when its
// capacity is a list's (see postingsCap).
func (l *lexicon) extend(k termKey, ps []posting, fresh *termPostings) bool {
	t := l.termIn(k, fresh)
	if all := t.all(); len(all) > 0 && all[len(all)-1].doc >= ps[0].doc {
		return false
	}
	if t.staged == t.n.Load() {
		l.dirty = append(l.dirty, t)
	}
	if t.staged == 0 && uint32(cap(ps)) == postingsCap(uint32(len(ps))) {
		t.data.Store(&ps[0])
		t.staged = uint32(len(ps))
		return true
	}
	if c := postingsCap(t.staged + uint32(len(ps))); t.staged == 0 || c > postingsCap(t.staged) {
		grown := make([]posting, c)
		copy(grown, t.all())
		t.data.Store(&grown[0])
	}
	copy(unsafe.Slice(t.data.Load(), t.staged+uint32(len(ps)))[t.staged:], ps)
	t.staged += uint32(len(ps))
	return true
}

// postingBlock hands out postings lists with a list's capacity for n
// (postingsCap) from shared blocks, which double from postingBlockMin to
// postingBlockMax postings: the segments of a customer's owner of a
// hundred chunks hold a few thousand, and blocks of the largest size from
// the first were 512 KiB an owner, most of the heap of a thousand such
// owners loaded with a segment each (320 MB of 430).
type postingBlock struct {
	free []posting
	size int // of the last block
}

const (
	postingBlockMin = 1 << 10  // postings, 8 KiB
	postingBlockMax = 64 << 10 // postings, 512 KiB
)

func (b *postingBlock) take(n int) []posting {
	c := int(postingsCap(uint32(n)))
	if c > postingBlockMax/8 {
		return make([]posting, n, c) // a long list is a block of its own
	}
	if c > cap(b.free) {
		b.size = min(max(2*b.size, postingBlockMin), postingBlockMax)
		b.free = make([]posting, max(b.size, c))
	}
	ps := b.free[:n:c]
	b.free = b.free[c:]
	return ps
}

// postingBytes is a list as snapshots and segments hold it: each
// posting's slot, then its frequency, little-endian.
func (e *encoder) postingBytes(ps []posting) []byte {
	if e.inMemoryOrder() {
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

// Segments is how many segments the index has saved or read beside its
// snapshot since it was written.
func (x *OwnerIndex) Segments() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if f := x.gen.file; f != nil {
		return f.segments
	}
	return 0
}

// SkippedSegment says why segments beside the snapshot x was read from
// were left out (see segment.go), nil when every one was applied: x then
// lacks the changes they held, which are to be caught up from the store.
func (x *OwnerIndex) SkippedSegment() error { return x.skippedSegment }
