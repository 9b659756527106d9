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

	"github.com/docsift/docsift/analysis"
)

// Snapshot layout: magic, version, then the fields below, then a CRC-32C of
// everything before it. The whole file is read and checked before any field
// is trusted, so a torn or bit-flipped file is rejected, never half-loaded.
//
// Version 2 added the document table (see docs.go). A version 1 file is
// refused like a corrupt one: the owner is rebuilt from the store once,
// which fills in the documents its filters need.
//
// Version 3 added, after the version, the version of the analysis rules
// the terms were cut by (analysis.Version), and at the end each slot's
// language and head length (see fields.go). A snapshot of other rules is
// refused too: its terms would not match the queries' (a German chunk
// indexed as English stems, say), so the owner is rebuilt under the
// current rules.
//
// Version 4: chunk heads hold the PDF's outline sections and no longer
// take list items, code or "label: value" lines for headings
// (ingest/titles.go), so heads stored under version 3 are rebuilt.
//
// Version 5 stores each term as its key (see termKey) instead of its text.
// Older snapshots are refused and the owner rebuilt, as for version 1.
//
// The int8 codes of the vectors (see quant.go) are not stored: they are
// computed from the float vectors as a snapshot is read, so the format did
// not change with them.
const (
	snapshotMagic   = "DSFTIDX\x00"
	snapshotVersion = 5
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
// catch-up starts after it. Writers wait while it encodes; searches do not.
func (x *OwnerIndex) WriteSnapshot(path string, lastSeq uint64) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return fmt.Errorf("index: write snapshot: %w", err)
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
	// Holding the writer lock keeps graph links still while the current
	// version is written; searches go on.
	x.mu.Lock()
	x.current.Load().encode(e, x.model, x.dim, lastSeq)
	x.mu.Unlock()
	if e.err == nil {
		e.err = bw.Flush()
	}
	if e.err != nil {
		return fmt.Errorf("index: write snapshot: %w", e.err)
	}
	var sum [4]byte
	putU32(sum[:], crc.Sum32())
	if _, err = f.Write(sum[:]); err != nil {
		return fmt.Errorf("index: write snapshot: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("index: sync snapshot: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("index: close snapshot: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("index: rename snapshot: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		derr = d.Sync()
		d.Close()
		if derr != nil {
			return fmt.Errorf("index: sync snapshot dir: %w", derr)
		}
	}
	return nil
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

// encode writes the view's version of the index.
func (v *view) encode(e *encoder, model string, dim int, lastSeq uint64) {
	e.bytes([]byte(snapshotMagic))
	e.u32(snapshotVersion)
	e.str(analysis.Version)
	e.str(model)
	e.u32(uint32(dim))
	e.u64(lastSeq)

	// Vectors: every slot, deleted ones included, because the graph links
	// slots by number.
	e.u32(v.n)
	for s := range v.n {
		e.u64(v.pages.id(s))
		e.u8(v.deadFlag(s))
	}
	v.eachPage(func(pg *page, used int) { e.f32s(pg.vecs[:used*dim]) })

	// Lexical docs are the slots, in the same order; then terms with their
	// postings.
	e.u32(v.n)
	for s := range v.n {
		e.u64(v.pages.id(s))
		e.u32(v.pages.docLen(s))
		e.u8(v.deadFlag(s))
	}
	// Terms of a Commit still running have no postings in the view. The
	// caller holds the writer lock, so two passes see the same terms.
	nTerms := 0
	v.gen.lex.each(func(t *termPostings) {
		if len(t.upTo(v.n)) > 0 {
			nTerms++
		}
	})
	e.u32(uint32(nTerms))
	v.gen.lex.each(func(t *termPostings) {
		ps := t.upTo(v.n)
		if len(ps) == 0 {
			return
		}
		e.u64(uint64(t.key))
		e.u32(uint32(len(ps)))
		for _, p := range ps {
			e.u32(p.doc)
			e.u32(p.tf)
		}
	})

	if v.gen.graph != nil {
		e.u8(kindHNSW)
		v.encodeGraph(e)
	} else {
		e.u8(kindExact)
	}

	v.encodeDocs(e)
	v.encodeLex(e)
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

// ReadSnapshot loads an index written by WriteSnapshot and the lastSeq it was
// written with. A file that fails its checksum or does not parse returns an
// error wrapping ErrCorruptSnapshot.
func ReadSnapshot(path string) (*OwnerIndex, uint64, error) {
	b, unmap, err := mapFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot: %w", err)
	}
	defer unmap()
	x, lastSeq, err := parseSnapshot(b)
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot %s: %w: %w", path, ErrCorruptSnapshot, err)
	}
	return x, lastSeq, nil
}

// parseSnapshot checks a snapshot file's magic and checksum and decodes it.
func parseSnapshot(b []byte) (*OwnerIndex, uint64, error) {
	if len(b) < len(snapshotMagic)+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, 0, errors.New("not a snapshot")
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	want := uint32(sum[0]) | uint32(sum[1])<<8 | uint32(sum[2])<<16 | uint32(sum[3])<<24
	if crc32.Checksum(body, castagnoli) != want {
		return nil, 0, errors.New("checksum mismatch")
	}
	return decodeSnapshot(&decoder{b: body[len(snapshotMagic):]})
}

// decodeSnapshot rebuilds an index from a snapshot body. Every count is
// checked against the bytes left before anything is allocated for it, and
// every slot number against the slots, so that a hostile file can neither
// make it allocate more than a small multiple of its size nor leave an
// index that reads out of bounds.
//
// Snapshots written before lexical docs shared slot numbers number docs on
// their own; a live doc is matched to its slot by entry ID, and the
// postings of deleted docs are dropped.
func decodeSnapshot(d *decoder) (*OwnerIndex, uint64, error) {
	if v := d.u32(); d.err == nil && v != snapshotVersion {
		return nil, 0, fmt.Errorf("unsupported version %d", v)
	}
	if rules := d.str(); d.err == nil && rules != analysis.Version {
		return nil, 0, fmt.Errorf("terms cut by analysis rules %q, not the current %q", rules, analysis.Version)
	}
	model := d.str()
	dim := int(d.u32())
	lastSeq := d.u64()
	if d.err == nil && dim > maxSnapshotDim {
		return nil, 0, fmt.Errorf("dimension %d out of range", dim)
	}
	x := New(model, dim)
	gen := x.gen

	// Slots.
	n := d.count(9)
	ids := make([]uint64, n)
	dead := make([]bool, n)
	for s := range n {
		ids[s] = d.u64()
		dead[s] = d.u8() != 0
	}
	raw := d.take(4 * n * dim)
	if d.err != nil {
		return nil, 0, d.err
	}
	vec := make([]float32, dim)
	for s, id := range ids {
		readF32s(vec, raw[4*s*dim:])
		slot := gen.appendSlot(id, vec, 0)
		if dead[s] {
			gen.pages.deadAt(slot).Store(x.epoch + 1)
			x.dead++
			continue
		}
		if _, dup := x.slotOf[id]; dup {
			return nil, 0, fmt.Errorf("id %d in two live slots", id)
		}
		x.slotOf[id] = slot
	}

	// Lexical docs, matched to slots.
	nd := d.count(13)
	docSlot := make([]uint32, nd) // noNode for a deleted doc
	hasDoc := make([]bool, n)
	for i := range nd {
		id, length, deleted := d.u64(), d.u32(), d.u8() != 0
		docSlot[i] = noNode
		if d.err != nil || deleted {
			continue
		}
		s, ok := x.slotOf[id]
		if !ok || hasDoc[s] {
			return nil, 0, fmt.Errorf("lexical doc %d (id %d) matches no live slot, or one with a doc already", i, id)
		}
		hasDoc[s] = true
		docSlot[i] = s
		p, off := pageOf(s)
		gen.pages[p].docLen[off] = length
		x.totalLen += uint64(length)
		x.live++
	}
	if d.err == nil && x.live != len(x.slotOf) {
		return nil, 0, fmt.Errorf("%d lexical docs for %d vectors", x.live, len(x.slotOf))
	}
	nt := d.count(12)
	gen.lex.reserve(nt)
	for range nt {
		key := termKey(d.u64())
		np := d.count(8)
		var t *termPostings
		for range np {
			doc, tf := d.u32(), d.u32()
			if d.err != nil {
				break
			}
			if int(doc) >= nd || tf == 0 {
				return nil, 0, fmt.Errorf("posting for doc %d of %d with frequency %d", doc, nd, tf)
			}
			s := docSlot[doc]
			if s == noNode {
				continue
			}
			if t == nil {
				t = gen.lex.termFor(key)
			}
			if ps := t.all(); len(ps) > 0 && ps[len(ps)-1].doc >= s {
				return nil, 0, fmt.Errorf("postings of term %x out of order", key)
			}
			gen.lex.stage(t, posting{s, tf})
		}
	}

	switch kind := d.u8(); {
	case d.err != nil:
	case kind == kindExact:
	case kind == kindHNSW:
		if err := decodeGraph(d, gen); err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, fmt.Errorf("unknown vector searcher kind %d", kind)
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	if err := decodeDocs(d, x); err != nil {
		return nil, 0, err
	}
	if err := decodeLex(d, x); err != nil {
		return nil, 0, err
	}
	if len(d.b) != 0 {
		return nil, 0, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	x.publish()
	return x, lastSeq, nil
}
