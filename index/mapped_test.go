package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// mappedTestIndex is a graph index with text, documents with metadata and
// deleted slots: every part of a snapshot.
func mappedTestIndex(t *testing.T, n int) (*OwnerIndex, []Query) {
	t.Helper()
	const dim = 16
	vecs := testVectors(n, dim, 31)
	es := entries(vecs, 1)
	for i := range es {
		es[i].Text = fmt.Sprintf("chunk %d about topic%d and theme%d", i, i%7, i%11)
		es[i].Name = fmt.Sprintf("report-%d.pdf", i%5)
		es[i].Doc = &Document{ID: fmt.Sprint("doc_", i/4), Metadata: map[string]string{"dept": fmt.Sprint("d", i%3)}}
	}
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	must(t, x.Add(es...))
	x.Delete(3, 4, 5, 40)
	var qs []Query
	for i, q := range testVectors(20, dim, 32) {
		qs = append(qs,
			Query{Vector: q, Text: fmt.Sprintf("topic%d theme%d", i%7, i%11), K: 10},
			Query{Text: fmt.Sprintf("report %d", i%5), K: 5},
			Query{Vector: q, K: 10, Filter: func(d *Document) bool { v, _ := d.Meta("dept"); return v == "d1" }})
	}
	return x, qs
}

func results(x *OwnerIndex, qs []Query) string {
	var b bytes.Buffer
	for _, q := range qs {
		fmt.Fprintln(&b, x.Search(q))
	}
	return b.String()
}

// mapped reports whether x's first page is read in place from a file.
func mapped(x *OwnerIndex) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.gen.pages) > 0 && x.gen.pages[0].src != nil
}

// TestSnapshotMovesIndexOntoFile: writing a snapshot moves the index onto
// the file, reading one reads it in place, and neither changes a single
// result; changes after that stay in memory and never reach the file.
func TestSnapshotMovesIndexOntoFile(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000)
	before := results(x, qs)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 7))
	if !mapped(x) {
		t.Fatal("the index is still in the heap after its snapshot")
	}
	if got := results(x, qs); got != before {
		t.Fatalf("results changed when the index moved onto its snapshot:\n%s\nwant\n%s", got, before)
	}
	file, err := os.ReadFile(path)
	must(t, err)

	y, seq, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if seq != 7 || !mapped(y) || y.Len() != x.Len() {
		t.Fatalf("loaded seq %d, mapped %v, %d entries of %d", seq, mapped(y), y.Len(), x.Len())
	}
	if got := results(y, qs); got != before {
		t.Fatalf("results changed after a reload:\n%s\nwant\n%s", got, before)
	}

	// Changes rewrite mapped words (deletions, links of old nodes) in
	// memory only.
	y.Delete(1, 2, 100)
	more := testVectors(300, 16, 33)
	must(t, y.Add(entries(more, 10000)...))
	if hits := y.Search(Query{Vector: more[0], K: 1}); len(hits) != 1 || hits[0].ID != 10000 {
		t.Fatalf("new vector not found first: %v", hits)
	}
	if y.Has(100) || !y.Has(10299) {
		t.Fatal("changes after a load are not seen")
	}
	after, err := os.ReadFile(path)
	must(t, err)
	if !bytes.Equal(file, after) {
		t.Fatal("changes to a loaded index reached its snapshot file")
	}
	z, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if got := results(z, qs); got != before {
		t.Fatal("a second load of the same file gives other results")
	}

	// Compaction copies the live entries into the heap.
	ids := y.IDs()
	y.Delete(ids[:len(ids)*3/4]...)
	if mapped(y) {
		t.Fatal("compaction left the index on the file")
	}
	for _, id := range ids[len(ids)*3/4:] {
		if !y.Has(id) {
			t.Fatalf("entry %d lost in compaction", id)
		}
	}
	checkHits(t, y.Search(Query{Vector: more[1], Text: "topic1", K: 10}))
}

// TestSnapshotDuringCommitStaysInHeap: a snapshot written while a Commit
// runs holds the published version only, and the index, which holds the
// Commit's changes too, stays where it is.
func TestSnapshotDuringCommitStaysInHeap(t *testing.T) {
	x, qs := mappedTestIndex(t, 500)
	before := results(x, qs)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.Commit(func() error {
		must(t, x.Add(Entry{ID: 9999, Vector: testVectors(1, 16, 34)[0], Text: "walrus"}))
		return x.WriteSnapshot(path, 1)
	}))
	if mapped(x) {
		t.Fatal("the index moved onto a snapshot that lacks a running Commit's changes")
	}
	if hits := x.Search(Query{Text: "walrus", K: 1}); len(hits) != 1 || hits[0].ID != 9999 {
		t.Fatalf("the Commit's entry is not searchable after it: %v", hits)
	}
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if y.Has(9999) || results(y, qs) != before {
		t.Fatal("the snapshot holds more than the version published when it was written")
	}
}

// TestMappedSnapshotEveryByteFlipped changes the bytes of a small
// snapshot one at a time (every third: the arrays' values repeat the same
// checks), with the checksum made right again, so that every check of the
// loader is reached by a hostile file: each must be refused or load an
// index that searches, changes and snapshots without panicking.
func TestMappedSnapshotEveryByteFlipped(t *testing.T) {
	x, _ := mappedTestIndex(t, 24)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	good, err := os.ReadFile(path)
	must(t, err)
	refused := 0
	tried := 0
	for i := len(snapshotMagic); i < len(good)-4; i += 3 {
		tried++
		b := append([]byte(nil), good...)
		b[i] ^= 0xa5
		b = withChecksum(b)
		y, _, err := testOpts.parseSnapshot(&mapping{b: b}, bytes.NewReader(b), 0, false)
		if err != nil {
			refused++
			continue
		}
		exercise(t, y)
	}
	t.Logf("%d of %d altered files refused", refused, tried)
	if refused == 0 {
		t.Fatal("no altered file was refused")
	}
}

// TestReadAheadAdvisesEveryByteOnce: the read-ahead workers ask for each
// block of the file once, whatever its size.
func TestReadAheadAdvisesEveryByteOnce(t *testing.T) {
	for _, size := range []int{0, 1, readAheadBlock - 1, readAheadBlock, readAheadBlock + 1, 7*readAheadBlock + 12345} {
		b := make([]byte, size)
		var (
			mu      sync.Mutex
			covered int
		)
		seen, all := make([]int, size), make(chan struct{})
		stop := readAhead(b, func(block []byte) error {
			start := int(uintptr(unsafe.Pointer(unsafe.SliceData(block))) - uintptr(unsafe.Pointer(unsafe.SliceData(b))))
			mu.Lock()
			defer mu.Unlock()
			for i := range block {
				seen[start+i]++
			}
			if covered += len(block); covered == size {
				close(all)
			}
			return nil
		})
		if size > 0 {
			<-all // the workers got to the end; stop then only waits for them
		}
		stop()
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("size %d: byte %d asked for %d times", size, i, n)
			}
		}
	}
}

// TestSnapshotBytesAsWrittenValueByValue: the arrays a little-endian
// machine writes as they lie in memory are the bytes the value-by-value
// encoding, which a big-endian machine uses, gives, for an index read from
// a snapshot with more added and some deleted.
func TestSnapshotBytesAsWrittenValueByValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	es, _ := namedSyntheticEntries(rng, 3000, 3)
	x := snapshotThenAdd(t, es, 2000)
	for i := uint64(1); i <= 3000; i += 7 {
		x.Delete(i)
	}
	v := x.current.Load()
	encode := func(valueByValue bool) []byte {
		var buf bytes.Buffer
		e := &encoder{w: bufio.NewWriter(&buf), valueByValue: valueByValue}
		v.encodeMapped(e, "m", 8, 1)
		must(t, e.err)
		must(t, e.w.Flush())
		return buf.Bytes()
	}
	inMemory := encode(false) // on a big-endian machine, value by value too
	valueByValue := encode(true)
	if !bytes.Equal(inMemory, valueByValue) {
		i := 0
		for i < min(len(inMemory), len(valueByValue)) && inMemory[i] == valueByValue[i] {
			i++
		}
		t.Fatalf("%d bytes written from memory, %d value by value; they differ from byte %d", len(inMemory), len(valueByValue), i)
	}
}

// TestAdviseWillNeedAnyStart: the kernel takes the read-ahead advice for a
// section of a mapped snapshot wherever in a page the section starts
// (madvise itself refuses a start inside a page).
func TestAdviseWillNeedAnyStart(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(path, make([]byte, 3*page), 0o600))
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	m, err := openMapping(f, testOpts.maps())
	must(t, err)
	for _, start := range []int{0, 1, 64, page - 1, page, page + 5, 3*page - 1} {
		if err := adviseWillNeed(m.b[start:]); err != nil {
			t.Errorf("advice from byte %d: %v", start, err)
		}
	}
	runtime.KeepAlive(m)
}

// TestSnapshotOfGraphNotLinkedYet: a graph whose slots all wait for their
// vectors (an owner past the graph's threshold uploaded while the
// embedder was down) has no entry point; its snapshot loads, and its
// first vector becomes the entry.
func TestSnapshotOfGraphNotLinkedYet(t *testing.T) {
	x := testOpts.New("m", 4)
	x.graphFrom = 0
	must(t, x.Add(Entry{ID: 1, Vector: make([]float32, 4), Text: "harbour ferry"}, Entry{ID: 2, Vector: make([]float32, 4), Text: "bakery"}))
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if hits := y.Search(Query{Text: "ferry", K: 1}); len(hits) != 1 || hits[0].ID != 1 {
		t.Fatalf("text search after the load: %v", hits)
	}
	must(t, y.Add(Entry{ID: 3, Vector: []float32{1, 0, 0, 0}, Text: "walrus"}))
	if hits := y.Search(Query{Vector: []float32{1, 0, 0, 0}, K: 1}); len(hits) != 1 || hits[0].ID != 3 {
		t.Fatalf("vector search after the first vector: %v", hits)
	}
}

// TestSnapshotDocumentIDs: the documents a snapshot holds come back with
// their IDs, however many blocks those fill, and each is found by its ID.
func TestSnapshotDocumentIDs(t *testing.T) {
	const dim = 4
	vecs := testVectors(3000, dim, 7)
	es := entries(vecs, 1)
	ids := make([]string, len(es))
	for i := range es {
		// About 120 KB of IDs, of lengths 1 to 64: two blocks and more.
		ids[i] = fmt.Sprintf("%d-%s", i, bytes.Repeat([]byte{'x'}, i%60))
		es[i].Doc = &Document{ID: ids[i]}
	}
	x := testOpts.New("m", dim)
	must(t, x.Add(es...))
	path := filepath.Join(t.TempDir(), "x.idx")
	if _, err := x.Save(path, 1); err != nil {
		t.Fatal(err)
	}
	y, _, err := testOpts.ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if d := y.Document(es[i].ID); d == nil || d.ID != id {
			t.Fatalf("entry %d: document %+v, want ID %q", i, d, id)
		}
		if _, ok := y.docIndex()[id]; !ok {
			t.Fatalf("document %q is not found by its ID", id)
		}
	}
}

// TestLastPageCopiedOnAppend: a load reads the last page, not full, in
// place too; the first entry added after copies it to the heap for the
// writer, while a version published before keeps its results, and the
// loaded index then agrees with one that never went through a file.
func TestLastPageCopiedOnAppend(t *testing.T) {
	x, qs := mappedTestIndex(t, 3000) // pages of 16, 16, 32 … 1,024 slots, then 952 of 2,048
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 7))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	lastInFile := func(x *OwnerIndex) bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.gen.pages[len(x.gen.pages)-1].src != nil
	}
	if !lastInFile(y) {
		t.Fatal("the last page was copied to the heap by the load")
	}
	ver := y.Current()
	pinned := func() string {
		var b bytes.Buffer
		for _, q := range qs {
			q.At = ver
			fmt.Fprintln(&b, y.Search(q))
		}
		return b.String()
	}
	before := pinned()

	// Deletions rewrite the page in the file; an addition copies it.
	y.Delete(2990, 2995)
	if !lastInFile(y) {
		t.Fatal("a deletion copied the last page")
	}
	last := func(x *OwnerIndex) *page {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.gen.pages[len(x.gen.pages)-1]
	}
	inFile := last(y)
	more := testVectors(40, 16, 77)
	must(t, y.Add(entries(more, 20000)...))
	copied := last(y)
	used := len(inFile.ids)
	same := slices.Equal(copied.vecs[:len(inFile.vecs)], inFile.vecs) && slices.Equal(copied.codes[:len(inFile.codes)], inFile.codes) &&
		slices.Equal(copied.scales[:used], inFile.scales) && slices.Equal(copied.ids[:used], inFile.ids) &&
		slices.Equal(copied.docLen[:used], inFile.docLen) && slices.Equal(copied.lang[:used], inFile.lang) &&
		slices.Equal(copied.headLen[:used], inFile.headLen) && slices.Equal(copied.doc[:used], inFile.doc) &&
		slices.Equal(copied.levels[:used], inFile.levels) // links: the added entries' inserts rewrote some
	for i := range used {
		same = same && copied.deadAt[i].Load() == inFile.deadAt[i].Load() && len(copied.upper[i]) == len(inFile.upper[i])
	}
	if !same {
		t.Fatal("the copy of the last page differs from the page in the file")
	}
	x.Delete(2990, 2995)
	must(t, x.Add(entries(more, 20000)...))
	if lastInFile(y) {
		t.Fatal("entries were added to the last page without copying it")
	}
	if got := pinned(); got != before {
		t.Fatalf("the version before the copy changed its results:\n%s\nwant\n%s", got, before)
	}
	if y.Has(2990) || !y.Has(2996) || !y.Has(20039) {
		t.Fatal("the copied page lost a deletion or an entry")
	}
	if hits := y.Search(Query{Vector: more[3], K: 1}); len(hits) != 1 || hits[0].ID != 20003 {
		t.Fatalf("an added vector is not found first: %v", hits)
	}
	if got, want := results(y, qs), results(x, qs); got != want {
		t.Fatalf("the loaded index answers otherwise than the one never saved:\n%s\nwant\n%s", got, want)
	}
}

// TestChecksumOf: a snapshot's checksum read from its file in buffers is
// the checksum of its bytes across every buffer boundary, and a file
// shorter than its mapping is an error, not a checksum of what is there.
func TestChecksumOf(t *testing.T) {
	b := make([]byte, 3<<20+5)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, 1 << 20, 1<<20 + 1, len(b) - 1, len(b)} {
		got, err := checksumOf(bytes.NewReader(b), int64(n))
		if err != nil || got != crc32.Checksum(b[:n], castagnoli) {
			t.Errorf("first %d bytes: checksum %08x, %v; want %08x", n, got, err, crc32.Checksum(b[:n], castagnoli))
		}
	}
	if _, err := checksumOf(bytes.NewReader(b[:100]), 200); err == nil {
		t.Error("checksum of 200 bytes of a 100-byte file: no error")
	}
}

// TestFrozenLexiconCheckReadsTheFile: the lexicon's check reads its arrays
// from the file, blocks at a time, so lists that cross blocks are checked
// whole, and a fault is found wherever it is, in the file (not the
// mapping, which the check no longer reads).
func TestFrozenLexiconCheckReadsTheFile(t *testing.T) {
	const slots = 1000
	terms := 3*fileArrayBlock/8 + 5 // keys and ends over three blocks and more
	keys, ends := make([]uint64, terms), make([]uint64, terms)
	var postings []posting
	for i := range terms {
		keys[i] = uint64(2*i + 1)
		for s := range i % 7 { // lists of 0 to 6, so some cross blocks
			postings = append(postings, posting{doc: uint32(s * 131), tf: 1})
		}
		ends[i] = uint64(len(postings))
	}
	perBlock := fileArrayBlock / 8
	if len(postings) < 3*perBlock {
		t.Fatalf("%d postings fill fewer than three blocks", len(postings))
	}
	// The three arrays one after the other, as a snapshot ends.
	file := slices.Concat(memoryOf(keys), memoryOf(ends), memoryOf(postings))
	endsAt, postingsAt := 8*terms, 16*terms
	mapped := &frozenLexicon{
		src:      &mapping{b: file},
		keys:     castSlice[uint64](file, terms),
		ends:     castSlice[uint64](file[endsAt:], terms),
		postings: castSlice[posting](file[postingsAt:], len(postings)),
	}
	if err := mapped.check(slots, bytes.NewReader(file)); err != nil {
		t.Fatalf("a good lexicon refused: %v", err)
	}
	// A posting that starts a block and not its list: its list crosses
	// from the first block.
	cross := perBlock
	if slices.Contains(ends, uint64(cross)) {
		t.Fatalf("posting %d starts a list", cross)
	}
	put32 := func(at int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[at:], v); return b }
	}
	put64 := func(at int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[at:], v); return b }
	}
	for name, alter := range map[string]func([]byte) []byte{
		"first key above the second":                   put64(0, 1<<40),
		"last key below the one before":                put64(endsAt-8, 0),
		"an end in the second block past the postings": put64(endsAt+8*(perBlock+3), uint64(len(postings))+1),
		"the last end short of the postings":           put64(postingsAt-8, uint64(len(postings))-1),
		"a slot out of range in the last block":        put32(len(file)-8, slots),
		"no frequency in a middle block":               put32(postingsAt+8*(2*perBlock+1)+4, 0),
		"a list out of order across blocks":            put32(postingsAt+8*cross, 0),
		"truncated":                                    func(b []byte) []byte { return b[:len(b)-1] },
	} {
		// The mapping good, the file faulty: the file is what is checked.
		if err := mapped.check(slots, bytes.NewReader(alter(slices.Clone(file)))); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

// TestReadSnapshotAfterChecksAFileOnce: behind a preview, the snapshot the
// preview checked is loaded without checking it again, and one that is
// not that file as it was checked (another put in its place, or the same
// one changed) gets every check.
func TestReadSnapshotAfterChecksAFileOnce(t *testing.T) {
	x, qs := mappedTestIndex(t, 500)
	want := results(x, qs)
	path := filepath.Join(t.TempDir(), "owner.idx")
	must(t, x.WriteSnapshot(path, 1))
	preview, _, err := testOpts.ReadSnapshotAlone(path)
	must(t, err)
	y, _, err := testOpts.ReadSnapshotAfter(path, preview)
	must(t, err)
	if results(y, qs) != want {
		t.Fatal("the snapshot loaded behind its preview searches otherwise")
	}

	// A vector's byte changed in place, the file's time put back: the
	// change is the kind the checksum finds, and only a full check does.
	info, err := os.Stat(path)
	must(t, err)
	pg := preview.gen.pages[0]
	at := int64(uintptr(unsafe.Pointer(&pg.vecs[0])) - uintptr(unsafe.Pointer(&pg.src.b[0])))
	good, err := os.ReadFile(path)
	must(t, err)
	bad := slices.Clone(good)
	bad[at] ^= 0x40
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(bad[at:at+1], at)
	must(t, err)
	must(t, f.Close())
	must(t, os.Chtimes(path, info.ModTime(), info.ModTime()))
	if _, _, err := testOpts.ReadSnapshotAfter(path, preview); err != nil {
		t.Fatalf("the file the preview checked was checked again: %v", err)
	}
	if _, _, err := testOpts.ReadSnapshot(path); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("the changed file, read alone: %v, want a corrupt snapshot", err)
	}
	later := info.ModTime().Add(time.Second)
	must(t, os.Chtimes(path, later, later))
	if _, _, err := testOpts.ReadSnapshotAfter(path, preview); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("the file changed since the preview: %v, want a corrupt snapshot", err)
	}

	// Another file of the same size and time renamed into its place.
	other := path + ".new"
	must(t, os.WriteFile(other, bad, 0o600))
	must(t, os.Chtimes(other, info.ModTime(), info.ModTime()))
	must(t, os.Rename(other, path))
	if _, _, err := testOpts.ReadSnapshotAfter(path, preview); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("another file in the preview's place: %v, want a corrupt snapshot", err)
	}
}
