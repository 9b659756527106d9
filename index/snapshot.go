package index

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes the current version of the index (what searches
// see, not the changes of a Commit still running) to path atomically: a
// temp file in the same directory, fsynced, renamed over path, then the
// directory fsynced, so a crash leaves either the old snapshot or the new
// one. lastSeq is the highest store sequence number the index reflects;
// catch-up starts after it. The segments of the snapshot it replaces, if
// any, are removed (see segment.go).
//
// Then, unless a Commit is running, the index moves onto the file it
// wrote: it reads its slots and postings in place from then on (see
// mapped.go) and the heap they filled is freed, so an owner's memory
// stays what it added since its last snapshot. Writers wait while it
// writes and moves; searches do not.
func (x *OwnerIndex) WriteSnapshot(path string, lastSeq uint64) error {
	// Holding the writer lock keeps graph links still while the current
	// version is written, and the index as written until it moves onto
	// the file; searches go on.
	x.mu.Lock()
	defer x.mu.Unlock()
	v := x.current.Load()
	if _, err := writeAtomically(path, func(e *encoder) { v.encodeMapped(e, x.model, x.dim, lastSeq) }); err != nil {
		return fmt.Errorf("index: write snapshot: %w", err)
	}
	removeSegments(path)
	// The file the index is read from, if it was the one at path, is
	// there no more: a segment of it would be refused.
	for _, g := range [2]*generation{v.gen, x.gen} {
		if g.file != nil && g.file.path == path {
			g.file.path = ""
		}
	}
	if x.open == 0 && !x.changed {
		x.moveOnto(path)
	}
	return nil
}

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
	bw := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
	e := &encoder{w: bw}
	encode(e)
	if e.err == nil {
		e.err = bw.Flush()
	}
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

// moveOnto makes the snapshot at path, just written from the current
// version with nothing changed since, the index's storage: the writer's
// generation becomes the one read in place from the file, with the same
// slot numbers, and is published. Searches on older views go on reading
// the heap generation, which is freed when the last of them ends. If the
// file cannot be mapped or read back, the index stays in the heap: that
// costs memory, not correctness. The caller holds mu.
func (x *OwnerIndex) moveOnto(path string) {
	m, err := openMapping(path)
	if err != nil {
		return
	}
	y, _, err := parseSnapshot(m, 0)
	if err != nil || y.live != x.live || y.gen.n != x.gen.n {
		return
	}
	y.gen.file.path = path
	x.gen, x.slotOf, x.docOf, x.dead = y.gen, y.slotOf, y.docOf, y.dead
	x.changed = true
	x.publish()
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
	x, lastSeq, err := readSnapshotFile(path, more)
	segs := <-segments
	if err != nil {
		return nil, 0, err
	}
	x, lastSeq, err = readSegments(x, lastSeq, segs.segs, func() (*OwnerIndex, uint64, error) { return readSnapshotFile(path, more) })
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
	return readSnapshotFile(path, 0)
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
// for more entries to come.
func readSnapshotFile(path string, more int) (*OwnerIndex, uint64, error) {
	m, err := openMapping(path)
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot: %w", err)
	}
	stop := readAhead(m.b, adviseWillNeed)
	defer stop()
	x, lastSeq, err := parseSnapshot(m, more)
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot %s: %w: %w", path, ErrCorruptSnapshot, err)
	}
	x.gen.file.path = path
	return x, lastSeq, nil
}

// parseSnapshot checks a snapshot file's magic and checksum and loads it.
func parseSnapshot(m *mapping, more int) (*OwnerIndex, uint64, error) {
	b := m.b
	if len(b) < len(snapshotMagic)+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, 0, errors.New("not a snapshot")
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	want := uint32(sum[0]) | uint32(sum[1])<<8 | uint32(sum[2])<<16 | uint32(sum[3])<<24
	// The checksum and the loader's checks each read the whole file, so
	// they run side by side: the loader is as safe on a corrupt file as
	// on a hostile one, and what it built is dropped unless the checksum
	// matches too.
	sumOK := make(chan bool, 1)
	go func() { sumOK <- crc32.Checksum(body, castagnoli) == want }()
	x, lastSeq, err := loadMapped(m, more)
	if !<-sumOK {
		return nil, 0, errors.New("checksum mismatch")
	}
	return x, lastSeq, err
}
