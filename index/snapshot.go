package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Snapshot layout: magic, version, then the fields mapped.go describes,
// then a CRC-32C of everything before it. The whole file is checked before
// any field is trusted, so a torn or bit-flipped file is rejected, never
// half-loaded.
//
// A snapshot of another version is refused like a corrupt one, and the
// owner rebuilt from the store once. Versions 1 to 5 were decoded into the
// heap; version 6 is read in place (see mapped.go). A snapshot of other
// analysis rules (analysis.Version) is refused too: its terms would not
// match the queries' (a German chunk indexed as English stems, say).
const (
	snapshotMagic = "DSFTIDX\x00"
	// maxSnapshotDim rejects absurd dimensions before allocating for them.
	maxSnapshotDim = 1 << 16
)

// Vector searcher kinds as stored in a snapshot.
const (
	kindExact = 0
	kindHNSW  = 1
)

// ErrCorruptSnapshot is wrapped by every ReadSnapshot error that means the
// file cannot be trusted (as opposed to missing or unreadable): the caller
// rebuilds the index from the store.
var ErrCorruptSnapshot = errors.New("index: corrupt snapshot")

// ErrOtherVersion is wrapped by a ReadSnapshot error for a sound snapshot
// that another docsift version wrote, in a format or with analysis rules
// this one does not read: the caller rebuilds the index from the store,
// as for a corrupt one, but nothing is wrong.
var ErrOtherVersion = errors.New("index: snapshot written by another docsift version")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes the current version of the index (what searches
// see, not the changes of a Commit still running) to path atomically: a
// temp file in the same directory, fsynced, renamed over path, then the
// directory fsynced, so a crash leaves either the old snapshot or the new
// one. lastSeq is the highest store sequence number the index reflects;
// catch-up starts after it. The segments of the snapshot it replaces, if
// any, are removed (see segment.go).
//
// Then, unless a Commit runs, the index moves onto the file it wrote: it
// reads its slots and postings in place from then on (see mapped.go) and
// the heap they filled is freed, so an owner's memory stays what it added
// since its last snapshot. Writers may go on while it writes (see
// SaveWrite); searches never wait.
func (x *OwnerIndex) WriteSnapshot(path string, lastSeq uint64) error {
	_, err := x.SaveWhole(path, lastSeq)
	return err
}

// wholeWrite is a whole snapshot being written while writers go on (see
// SaveWrite). At a million chunks the write takes from seconds to tens of
// seconds, which the chunks being added need not wait for: the version
// written is the one current at its start (views are immutable, and the
// storage under them append-only), and what writers change meanwhile is
// kept apart: the slots they add come after the file's, and the earlier
// slots whose deletion or graph links they change are marked. Finish
// moves the index onto the file with those changes applied over it, as a
// segment read beside it would be (see moveOnto); the next Save writes
// them as the file's first segment.
//
// A Commit running at its start or at Finish keeps the index where it is
// (the file still holds the version published at the start); a caller
// that wants the index moved keeps Commits out around both, and lets them
// run during Write.
type wholeWrite struct {
	x       *OwnerIndex
	path    string
	lastSeq uint64
	v       *view
	gen     *generation // the writer's at the start: a compaction since keeps the index where it is
	since   touchedSet  // nil: changes are not tracked, the index stays
	docRefs []uint32
	y       *OwnerIndex // the file read back, to move onto
	// at is the version whose changes since v have been applied to y
	// (nil: none), and after the slots changed since it (see catchUp).
	at    *view
	after touchedSet
	err   error
	held  time.Duration // writers waited for mu
}

// startWhole starts writing the whole snapshot of the current version of
// x to path (see wholeWrite). The caller holds saving.
func (x *OwnerIndex) startWhole(path string, lastSeq uint64) *wholeWrite {
	w := &wholeWrite{x: x, path: path, lastSeq: lastSeq}
	defer w.locked()()
	w.v, w.gen = x.current.Load(), x.gen
	if x.open == 0 {
		w.since = newTouchedSet(w.v.n)
		x.track(w.since)
	}
	return w
}

// locked takes the writer lock, and returns what releases it, counting
// the time it was held.
func (w *wholeWrite) locked() (unlock func()) {
	w.x.mu.Lock()
	t := time.Now()
	return func() {
		w.held += time.Since(t)
		w.x.mu.Unlock()
	}
}

// Write writes the file and reads it back to move onto (its checksum and
// checks take about a second at a million chunks), taking the writer lock
// only for a moment. Finish says whether it failed.
func (w *wholeWrite) Write() {
	x, v := w.x, w.v
	if x.hooks.wholeWriteStarted != nil {
		x.hooks.wholeWriteStarted()
	}
	if _, err := writeAtomically(w.path, func(e *encoder) { w.docRefs = v.encodeMapped(e, x.model, x.dim, w.lastSeq) }); err != nil {
		w.err = fmt.Errorf("index: write snapshot: %w", err)
		return
	}
	unlock := w.locked()
	removeSegments(w.path)
	// The file the index is read from, if it was the one at path, is
	// there no more: a segment of it would be refused.
	for _, g := range [2]*generation{v.gen, x.gen} {
		if g.file != nil && g.file.path == w.path {
			g.file.path = ""
		}
	}
	unlock()
	if w.since != nil {
		w.y = x.opts.readWritten(w.path)
	}
	if w.y != nil {
		// Applying changes needs the documents by ID, and so does the
		// writer after the move: made here, not with the lock held (a
		// sixth of a second at a million chunks).
		w.y.docIndex()
		w.catchUp()
	}
}

// catchUp applies to y, without the writer lock, what writers changed
// since v up to the version current now, and has them mark what they
// change after it apart, so that Finish applies with the lock held only
// that: at a million chunks, what was added while the file was written
// took up to 2 s to apply.
func (w *wholeWrite) catchUp() {
	x := w.x
	x.mu.Lock()
	// Writers mark their changes apart from those applied here only
	// from a moment no Commit runs (one running marks where it began),
	// which comes between two commits of one writer; should commits
	// overlap for longer, Finish applies it all.
	if x.idle == nil {
		x.idle = sync.NewCond(&x.mu)
	}
	wake := time.AfterFunc(catchUpWait, func() {
		x.mu.Lock()
		x.idle.Broadcast()
		x.mu.Unlock()
	})
	defer wake.Stop()
	for start := time.Now(); x.open > 0 && time.Since(start) < catchUpWait; {
		if x.hooks.catchUpWaits != nil {
			x.hooks.catchUpWaits()
		}
		x.idle.Wait()
	}
	t := time.Now() // writers wait from here
	var at *view
	if x.open == 0 && x.gen == w.gen {
		at = x.current.Load()
		w.after = newTouchedSet(at.n)
		x.track(w.after)
		x.gen.lex.startLog()
	}
	x.mu.Unlock()
	w.held += time.Since(t)
	if at == nil {
		return
	}
	if w.x.hooks.wholeCatchUpStarted != nil {
		w.x.hooks.wholeCatchUpStarted()
	}
	if err := w.apply(at, w.v, w.since, w.gen.lex.tableTerms); err != nil {
		w.y = nil // the index stays where it is
		return
	}
	w.at = at
}

// apply applies to y what cur holds beyond from, the version y holds:
// the slots and documents added after it, and its slots that marks marks.
// terms yields, at least, the terms with postings of the slots added.
func (w *wholeWrite) apply(cur, from *view, marks touchedSet, terms iter.Seq[*termPostings]) error {
	if cur.n == from.n && cur.docs.n == from.docs.n && !marks.any() {
		return nil
	}
	f, v := w.y.gen.file, w.v
	ref := func(o uint32) uint32 { // the file's number of a document + 1
		if o < v.docs.n {
			return w.docRefs[o]
		}
		return f.docs + o - v.docs.n + 1
	}
	b := encodeBytes(func(e *encoder) { cur.encodeChanges(e, f, marks, 0, from.docs.n, ref, terms) })
	_, err := w.y.applySegment(b)
	return err
}

// Finish moves the index onto the file Write wrote, unless a Commit runs
// or it could not be read back, and ends the save. It returns what was
// saved, and Write's error.
func (w *wholeWrite) Finish() (Saved, error) {
	x := w.x
	defer x.saving.Unlock()
	unlock := w.locked()
	x.track(nil)
	logged := w.gen.lex.takeLog()
	if w.y != nil && x.open == 0 && x.gen == w.gen {
		x.moveOnto(w, logged)
	}
	unlock()
	if w.err != nil {
		return Saved{}, w.err
	}
	return Saved{Whole: true, Bytes: fileSize(w.path), Held: w.held}, nil
}

// catchUpWait bounds how long catchUp waits for a moment no Commit runs.
const catchUpWait = time.Second

// saveHooks, those set, run at moments of a save: tests change the index
// then, as writers would.
type saveHooks struct {
	// segmentWriteStarted and wholeWriteStarted run as a segment or a
	// whole snapshot starts being written, and wholeCatchUpStarted as
	// catchUp starts applying what writers changed meanwhile, with no
	// lock held.
	segmentWriteStarted, wholeWriteStarted, wholeCatchUpStarted func()
	// catchUpWaits runs, with mu held, as catchUp waits for a Commit to
	// end.
	catchUpWaits func()
}

// track has the writer mark in since (nil: nowhere) the slots whose
// deletion or graph links it changes, beside the marks of the file the
// index is read from (see snapshotFile.touched). The caller holds mu.
func (x *OwnerIndex) track(since touchedSet) {
	x.since = since
	if g := x.gen.graph; g != nil {
		g.since = since
	}
}

// readWritten reads back the snapshot WriteSnapshot wrote at path, nil if
// it cannot: the index then stays where it is, which costs memory, not
// correctness.
func (o Options) readWritten(path string) *OwnerIndex {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	m, err := openMapping(f, o.maps())
	if err != nil {
		return nil
	}
	y, _, err := o.parseSnapshot(m, f, 0, false)
	if err != nil {
		return nil
	}
	y.gen.file.path = path
	return y
}

// writeBuffers are the buffers of writeAtomically. Thousands of
// customers' owners are saved in turn every 10,000 chunks they gain
// between them (see ingest's saveWhenGrown), most as segments of a few
// kilobytes: a megabyte buffer each was 34 GB allocated and cleared in
// the first 130,000 chunks of `bench scale --customers 3000`, half of
// all the server allocated.
var writeBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<20) }}

// writeAtomically writes what encode encodes, then its CRC-32C, to path
// atomically: a temp file in the same directory, fsynced, renamed over
// path, then the directory fsynced, so a crash leaves either the old file
// or the new one. It returns the checksum.
func writeAtomically(path string, encode func(e *encoder)) (sum uint32, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	crc := crc32.New(castagnoli)
	bw := writeBuffers.Get().(*bufio.Writer)
	bw.Reset(io.MultiWriter(f, crc))
	e := &encoder{w: bw}
	encode(e)
	if e.err == nil {
		e.err = bw.Flush()
	}
	bw.Reset(nil) // not to keep the file
	writeBuffers.Put(bw)
	if e.err != nil {
		return 0, e.err
	}
	var b [4]byte
	sum = crc.Sum32()
	putU32(b[:], sum)
	if _, err = f.Write(b[:]); err != nil {
		return 0, err
	}
	if err = f.Sync(); err != nil {
		return 0, fmt.Errorf("sync: %w", err)
	}
	if err = f.Close(); err != nil {
		return 0, err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return 0, err
	}
	if d, derr := os.Open(dir); derr == nil {
		derr = d.Sync()
		d.Close()
		if derr != nil {
			return 0, fmt.Errorf("sync dir: %w", derr)
		}
	}
	return sum, nil
}

// moveOnto makes w.y, just read from the snapshot written of w.v, the
// index's storage: the writer's generation becomes the one read in place
// from the file, with the same slot numbers, and is published. What
// writers changed since (catchUp applied some already) is applied over
// it in the heap as a segment (see encodeChanges), and stays the file's
// to save: the next Save writes it as its first segment. Searches on
// older views go on reading the generation before, which is freed when
// the last of them ends. If the changes cannot be applied, the index
// stays where it is. logged is the lexicon's log (see startLog). The
// caller holds mu, and no Commit runs.
func (x *OwnerIndex) moveOnto(w *wholeWrite, logged []*termPostings) {
	y, v := w.y, w.v
	from, marks, terms := v, w.since, w.gen.lex.tableTerms
	if w.at != nil {
		// The log started with the catch-up.
		from, marks, terms = w.at, w.after, slices.Values(logged)
	}
	if err := w.apply(x.current.Load(), from, marks, terms); err != nil {
		return
	}
	// The file holds v, and its slots changed since are those of either
	// pass: the next segment's.
	f := y.gen.file
	f.segments, f.savedN, f.savedDocs, f.lastSum = 0, v.n, f.docs, f.sum
	if w.after != nil {
		w.since.add(w.after)
	}
	f.touched = w.since
	if g := y.gen.graph; g != nil {
		g.touched = w.since
	}
	if y.live != x.live || y.gen.n != x.gen.n {
		return
	}
	x.gen, x.slotOf, x.docOf, x.dead = y.gen, y.slotOf, y.docOf, y.dead
	x.changed = true
	x.publish()
}

// encodeBytes is what encode encodes, then its CRC-32C, in memory.
func encodeBytes(encode func(e *encoder)) []byte {
	var buf bytes.Buffer
	bw := bufio.NewWriterSize(&buf, 1<<20)
	encode(&encoder{w: bw})
	bw.Flush() // into memory: no error
	var b [4]byte
	putU32(b[:], crc32.Checksum(buf.Bytes(), castagnoli))
	return append(buf.Bytes(), b[:]...)
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// tempInfix sits between a snapshot's name and the random digits of its
// temp file: "owner.idx.tmp123456".
const tempInfix = ".tmp"

// RemoveStaleTemps deletes the temp files that WriteSnapshot calls killed
// mid-write (a crash, kill -9) left in dir, and returns how many it removed;
// a WriteSnapshot that fails removes its own. It must not run while a
// WriteSnapshot into dir may be running: call it at start, when the data
// dir's lock keeps other processes out. A missing dir holds none.
func RemoveStaleTemps(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("index: remove stale temp files: %w", err)
	}
	removed := 0
	for _, de := range entries {
		if !de.Type().IsRegular() || !isSnapshotTemp(de.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, de.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("index: remove stale temp file: %w", err)
		}
		removed++
	}
	return removed, nil
}

// isSnapshotTemp reports whether name is a temp file of WriteSnapshot: a
// name, tempInfix, and the digits os.CreateTemp put in place of its "*".
func isSnapshotTemp(name string) bool {
	i := strings.LastIndex(name, tempInfix)
	if i <= 0 {
		return false
	}
	digits := name[i+len(tempInfix):]
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

func (v *view) deadFlag(s uint32) uint8 {
	if v.alive(s) {
		return 0
	}
	return 1
}

// eachPage calls fn with every page holding slots below v.n, in order, and
// how many of its slots those are.
func (v *view) eachPage(fn func(pg *page, used int)) {
	left := int(v.n)
	for p := 0; left > 0; p++ {
		used := min(left, pageSlots(p))
		fn(v.pages[p], used)
		left -= used
	}
}

// ReadSnapshot loads an index written by WriteSnapshot, with the segments
// Save wrote beside it, and the lastSeq they were written with. The index
// reads the snapshot in place (see mapped.go) and holds the segments'
// changes in the heap. A snapshot that fails its checksum or its checks
// returns an error wrapping ErrCorruptSnapshot; a segment that does is
// left out with those after it (see SkippedSegment), and lastSeq is then
// the last applied one's.
func ReadSnapshot(path string) (*OwnerIndex, uint64, error) {
	return Options{}.ReadSnapshotAfter(path, nil)
}

// ReadSnapshot is ReadSnapshot of an index made with o.
func (o Options) ReadSnapshot(path string) (*OwnerIndex, uint64, error) {
	return o.ReadSnapshotAfter(path, nil)
}

// ReadSnapshotAfter is ReadSnapshot once preview, read from the same
// snapshot by ReadSnapshotAlone, has been searched while this loads. The
// file it checked (the same one: a snapshot is replaced by a rename, never
// rewritten) is mapped once more, as preview's mapping must not take the
// writer's changes, but not checked again: its checksum and the lexicon's
// and graph's checks are most of a load, and at a million chunks they
// took some 1.5 s of the two cores the first searches after a crash run
// on. A snapshot written since, or a preview of none, gets every check.
func ReadSnapshotAfter(path string, preview *OwnerIndex) (*OwnerIndex, uint64, error) {
	return Options{}.ReadSnapshotAfter(path, preview)
}

// ReadSnapshotAfter is ReadSnapshotAfter of an index made with o.
func (o Options) ReadSnapshotAfter(path string, preview *OwnerIndex) (*OwnerIndex, uint64, error) {
	var checked os.FileInfo
	if preview != nil && preview.gen.file != nil {
		checked = preview.gen.file.info
	}
	// The segments are read beside the snapshot.
	type read struct {
		segs [][]byte
		err  error
	}
	segments := make(chan read, 1)
	go func() {
		var r read
		for k := 1; ; k++ {
			b, err := os.ReadFile(segmentPath(path, k))
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					r.err = fmt.Errorf("segment %d and after left out: %w", k, err)
				}
				break
			}
			r.segs = append(r.segs, b)
		}
		segments <- r
	}()
	more := segmentSlots(path)
	x, lastSeq, err := o.readSnapshotFile(path, more, checked)
	segs := <-segments
	if err != nil {
		return nil, 0, err
	}
	file := x.gen.file.info // checked by now
	x, lastSeq, err = readSegments(x, lastSeq, segs.segs, func() (*OwnerIndex, uint64, error) { return o.readSnapshotFile(path, more, file) })
	if err == nil && x.skippedSegment == nil {
		x.skippedSegment = segs.err
	}
	return x, lastSeq, err
}

// ReadSnapshotAlone is ReadSnapshot without the segments beside the
// snapshot: the index as the snapshot was written, which is read in place
// and so ready in about the time its checksum takes, where applying
// segments of millions of terms takes seconds more. It is for searching
// while the whole index loads (see ingest); it is not to be saved, as a
// segment it wrote would take the place of one the snapshot has.
func ReadSnapshotAlone(path string) (*OwnerIndex, uint64, error) {
	return Options{}.ReadSnapshotAlone(path)
}

// ReadSnapshotAlone is ReadSnapshotAlone of an index made with o.
func (o Options) ReadSnapshotAlone(path string) (*OwnerIndex, uint64, error) {
	return o.readSnapshotFile(path, 0, nil)
}

// SegmentBytes is the size of the segments beside the snapshot at path, a
// measure of what applying them costs.
func SegmentBytes(path string) int64 {
	var total int64
	for k := 1; ; k++ {
		st, err := os.Stat(segmentPath(path, k))
		if err != nil {
			return total
		}
		total += st.Size()
	}
}

// readSnapshotFile is ReadSnapshot of the snapshot alone, its maps sized
// for more entries to come. checked is the file as this process checked
// it before, if it did: if path is still that file, unchanged, it is not
// checked again.
func (o Options) readSnapshotFile(path string, more int, checked os.FileInfo) (*OwnerIndex, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot: %w", err)
	}
	m, err := openMapping(f, o.maps())
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot: %w", err)
	}
	again := checked != nil && os.SameFile(info, checked) && info.Size() == checked.Size() && info.ModTime().Equal(checked.ModTime())
	stop := func() {}
	if !again && !m.inHeap { // the checks read the whole file
		stop = readAhead(m.b, adviseWillNeed)
	}
	defer stop()
	x, lastSeq, err := o.parseSnapshot(m, f, more, again)
	if errors.Is(err, ErrOtherVersion) {
		return nil, 0, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot %s: %w: %w", path, ErrCorruptSnapshot, err)
	}
	x.gen.file.path, x.gen.file.info = path, info
	return x, lastSeq, nil
}

// parseSnapshot checks a snapshot file's magic and checksum and loads it.
// The checksum is read from file, the file m maps (see checksumOf); a file
// checked before is not checked again (see loadMapped).
func (o Options) parseSnapshot(m *mapping, file io.ReaderAt, more int, checked bool) (*OwnerIndex, uint64, error) {
	b := m.b
	if len(b) < len(snapshotMagic)+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, 0, errors.New("not a snapshot")
	}
	// The format first: an older one is not read further, nor checked.
	if v := binary.LittleEndian.Uint32(b[len(snapshotMagic):]); v != mappedVersion {
		return nil, 0, fmt.Errorf("%w: format %d, this version reads %d", ErrOtherVersion, v, mappedVersion)
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	want := uint32(sum[0]) | uint32(sum[1])<<8 | uint32(sum[2])<<16 | uint32(sum[3])<<24
	// The checksum and the loader's checks each read the whole file, so
	// they run side by side: the loader is as safe on a corrupt file as
	// on a hostile one, and what it built is dropped unless the checksum
	// matches too.
	sumErr := make(chan error, 1)
	if checked {
		sumErr <- nil
	} else {
		go verifyChecksum(file, int64(len(body)), want, sumErr)
	}
	x, lastSeq, err := o.loadMapped(m, file, more, checked)
	if err := <-sumErr; err != nil {
		return nil, 0, err
	}
	return x, lastSeq, err
}

// verifyChecksum sends on result whether the first n bytes of file have the
// checksum want.
func verifyChecksum(file io.ReaderAt, n int64, want uint32, result chan<- error) {
	got, err := checksumOf(file, n)
	switch {
	case err != nil:
		result <- fmt.Errorf("checksum not read: %w", err)
	case got != want:
		result <- errors.New("checksum mismatch")
	default:
		result <- nil
	}
}

// checksumOf is the CRC-32C of the first n bytes r reads. A mapped
// snapshot's checksum is read from its file rather than its mapping: the
// kernel copies the page cache through its own large pages into a buffer
// the checksum reads from the processor's cache, where a pass over the
// mapping first touches each of its 4 KB pages, which is most of the
// pass's cost. A million chunks' 3.9 GB took 0.5 s of CPU against
// 1.3-1.5. The lexicon's check reads its part so too (see
// frozenLexicon.check); the load still touches the pages of the
// documents and the graph it checks, but no longer the vectors' and
// postings', of which searches touch few.
func checksumOf(r io.ReaderAt, n int64) (uint32, error) {
	h := crc32.New(castagnoli)
	read, err := io.CopyBuffer(h, io.NewSectionReader(r, 0, n), make([]byte, max(min(n, 1<<20), 1)))
	if err == nil && read < n {
		err = fmt.Errorf("%d bytes of %d: %w", read, n, io.ErrUnexpectedEOF)
	}
	return h.Sum32(), err
}
