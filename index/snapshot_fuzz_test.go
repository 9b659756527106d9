package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// fuzzSeeds returns snapshots of small indexes: empty, scanned, graph, and
// without vectors, with deletes and replacements.
func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	build := []func() *OwnerIndex{
		func() *OwnerIndex { return testOpts.New("m", 4) },
		func() *OwnerIndex {
			x := testOpts.New("builtin-v1", 4)
			must(f, x.Add(textEntries(1, 6, 4, "walrus")...))
			must(f, x.Add(Entry{ID: 2, Vector: []float32{0, 1, 0, 0}, Text: "sea ice"}))
			x.Delete(3)
			return x
		},
		func() *OwnerIndex {
			x := testOpts.New("m", 4)
			x.graphFrom = 0
			must(f, x.Add(textEntries(1, 40, 4, "walrus")...))
			x.Delete(5, 6)
			return x
		},
		func() *OwnerIndex {
			x := testOpts.New("m", 0)
			must(f, x.Add(Entry{ID: 7, Vector: []float32{}, Text: "only words here"}))
			return x
		},
		func() *OwnerIndex { // with documents, one of them deleted
			x := testOpts.New("m", 4)
			es := textEntries(1, 9, 4, "walrus")
			for i := range es {
				es[i].Doc = &Document{ID: fmt.Sprint("doc_", i%3), Metadata: map[string]string{"dept": "legal"}}
			}
			must(f, x.Add(es...))
			x.Delete(1, 4, 7)
			return x
		},
	}
	var seeds [][]byte
	for i, fn := range build {
		path := filepath.Join(f.TempDir(), fmt.Sprint(i))
		must(f, fn().WriteSnapshot(path, uint64(i)))
		b, err := os.ReadFile(path)
		must(f, err)
		seeds = append(seeds, b)
	}
	return seeds
}

// withChecksum returns b with its last four bytes replaced by the checksum
// of the rest, so that mutations reach the decoder.
func withChecksum(b []byte) []byte {
	if len(b) < len(snapshotMagic)+4 {
		return b
	}
	out := append([]byte(nil), b...)
	body := out[:len(out)-4]
	binary.LittleEndian.PutUint32(out[len(out)-4:], crc32.Checksum(body, castagnoli))
	return out
}

// allocated is the bytes allocated so far by the process.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// FuzzReadSnapshot feeds the snapshot decoder hostile files. It must
// reject them or return an index that searches, changes and snapshots
// without panicking, and it must never allocate far more than the file's
// size: pages round up a few slots, nothing more.
func FuzzReadSnapshot(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, withChecksum(b)} {
			before := allocated()
			x, _, err := testOpts.parseSnapshot(&mapping{b: in}, bytes.NewReader(in), 0, false)
			if grown, limit := allocated()-before, uint64(32*len(in)+1<<20); grown > limit {
				t.Fatalf("decoding %d bytes allocated %d", len(in), grown)
			}
			if err != nil {
				continue
			}
			exercise(t, x)
		}
	})
}

// exercise searches, changes and encodes a decoded index.
func exercise(t *testing.T, x *OwnerIndex) {
	q := make([]float32, x.Dim())
	for i := range q {
		q[i] = float32(1 / math.Sqrt(float64(len(q))))
	}
	checkHits(t, x.Search(Query{Vector: q, Text: "walrus sea ice", K: 10}))
	if ids := x.IDs(); len(ids) > 0 {
		x.Delete(ids[0])
	}
	if err := x.Add(Entry{ID: math.MaxUint64, Vector: q, Text: "walrus"}); err != nil {
		t.Fatal(err)
	}
	checkHits(t, x.Search(Query{Vector: q, Text: "walrus", K: 10}))
	e := &encoder{w: bufio.NewWriter(io.Discard)}
	x.current.Load().encodeMapped(e, x.model, x.dim, 0)
	if e.err != nil {
		t.Fatal(e.err)
	}
}
