package index

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// Snapshot layout: magic, version, then the fields below, then a CRC-32C of
// everything before it. The whole file is read and checked before any field
// is trusted, so a torn or bit-flipped file is rejected, never half-loaded.
const (
	snapshotMagic   = "DSFTIDX\x00"
	snapshotVersion = 1
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

// WriteSnapshot writes the index to path atomically: a temp file in the same
// directory, fsynced, renamed over path, then the directory fsynced, so a
// crash leaves either the old snapshot or the new one. lastSeq is the
// highest store sequence number the index reflects; catch-up starts after it.
func (x *OwnerIndex) WriteSnapshot(path string, lastSeq uint64) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
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
	x.mu.RLock()
	x.encode(e, lastSeq)
	x.mu.RUnlock()
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

// encode writes the index body; the caller holds the read lock.
func (x *OwnerIndex) encode(e *encoder, lastSeq uint64) {
	e.bytes([]byte(snapshotMagic))
	e.u32(snapshotVersion)
	e.str(x.model)
	e.u32(uint32(x.dim))
	e.u64(lastSeq)

	// Vectors: every slot, tombstones included, because the graph links
	// slots by number.
	vs := x.vs
	e.u32(uint32(vs.slots()))
	for s, id := range vs.ids {
		e.u64(id)
		if vs.dead[s] {
			e.u8(1)
		} else {
			e.u8(0)
		}
	}
	e.f32s(vs.data)

	// Lexical index: docs, then terms with their postings.
	l := x.lex
	e.u32(uint32(len(l.docID)))
	for d, id := range l.docID {
		e.u64(id)
		e.u32(l.docLen[d])
		if l.docDead[d] {
			e.u8(1)
		} else {
			e.u8(0)
		}
	}
	e.u32(uint32(len(l.terms)))
	for t, term := range l.terms {
		e.str(term)
		ps := l.postings[t]
		e.u32(uint32(len(ps)))
		for _, p := range ps {
			e.u32(p.doc)
			e.u32(p.tf)
		}
	}

	// Vector searcher.
	if g, ok := x.vec.(*hnsw); ok {
		e.u8(kindHNSW)
		g.encode(e)
	} else {
		e.u8(kindExact)
	}
}

// ReadSnapshot loads an index written by WriteSnapshot and the lastSeq it was
// written with. A file that fails its checksum or does not parse returns an
// error wrapping ErrCorruptSnapshot.
func ReadSnapshot(path string) (*OwnerIndex, uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot: %w", err)
	}
	if len(b) < len(snapshotMagic)+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, 0, fmt.Errorf("index: read snapshot %s: not a snapshot: %w", path, ErrCorruptSnapshot)
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	want := uint32(sum[0]) | uint32(sum[1])<<8 | uint32(sum[2])<<16 | uint32(sum[3])<<24
	if crc32.Checksum(body, castagnoli) != want {
		return nil, 0, fmt.Errorf("index: read snapshot %s: checksum mismatch: %w", path, ErrCorruptSnapshot)
	}
	x, lastSeq, err := decodeSnapshot(&decoder{b: body[len(snapshotMagic):]})
	if err != nil {
		return nil, 0, fmt.Errorf("index: read snapshot %s: %w: %w", path, ErrCorruptSnapshot, err)
	}
	return x, lastSeq, nil
}

func decodeSnapshot(d *decoder) (*OwnerIndex, uint64, error) {
	if v := d.u32(); d.err == nil && v != snapshotVersion {
		return nil, 0, fmt.Errorf("unsupported version %d", v)
	}
	model := d.str()
	dim := int(d.u32())
	lastSeq := d.u64()
	if d.err == nil && dim > maxSnapshotDim {
		return nil, 0, fmt.Errorf("dimension %d out of range", dim)
	}
	x := New(model, dim)

	vs := x.vs
	n := d.count(9)
	vs.ids = make([]uint64, n)
	vs.dead = make([]bool, n)
	for s := range n {
		vs.ids[s] = d.u64()
		vs.dead[s] = d.u8() != 0
	}
	vs.data = d.f32s(n * dim)
	for s, id := range vs.ids {
		if vs.dead[s] {
			vs.nDead++
			continue
		}
		if _, dup := vs.slotOf[id]; dup {
			return nil, 0, fmt.Errorf("id %d in two live slots", id)
		}
		vs.slotOf[id] = uint32(s)
	}

	l := x.lex
	nd := d.count(13)
	l.docID = make([]uint64, nd)
	l.docLen = make([]uint32, nd)
	l.docDead = make([]bool, nd)
	for i := range nd {
		l.docID[i] = d.u64()
		l.docLen[i] = d.u32()
		l.docDead[i] = d.u8() != 0
		if l.docDead[i] {
			l.nDead++
			continue
		}
		l.docOf[l.docID[i]] = uint32(i)
		l.totalLen += uint64(l.docLen[i])
	}
	nt := d.count(8)
	l.terms = make([]string, nt)
	l.postings = make([][]posting, nt)
	for t := range nt {
		l.terms[t] = d.str()
		l.termID[l.terms[t]] = uint32(t)
		np := d.count(8)
		ps := make([]posting, np)
		for i := range ps {
			ps[i] = posting{d.u32(), d.u32()}
			if d.err == nil && int(ps[i].doc) >= nd {
				return nil, 0, fmt.Errorf("posting for doc %d of %d", ps[i].doc, nd)
			}
		}
		l.postings[t] = ps
	}
	if d.err == nil && len(l.docOf) != len(vs.slotOf) {
		return nil, 0, fmt.Errorf("%d lexical docs for %d vectors", len(l.docOf), len(vs.slotOf))
	}

	switch kind := d.u8(); {
	case d.err != nil:
	case kind == kindExact:
	case kind == kindHNSW:
		g, err := decodeHNSW(d, vs)
		if err != nil {
			return nil, 0, err
		}
		x.vec = g
	default:
		return nil, 0, fmt.Errorf("unknown vector searcher kind %d", kind)
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	if len(d.b) != 0 {
		return nil, 0, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return x, lastSeq, nil
}
