package index

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
)

func memoryTotals(parts []MemoryPart) (heap, mapped int64) {
	for _, p := range parts {
		heap += p.Heap
		mapped += p.Mapped
	}
	return heap, mapped
}

// TestMemoryAccountsForTheHeap builds an index in the heap and compares
// what Memory says it holds with what the heap grew by, then checks that
// after a snapshot the index holds its slots, vectors and postings in the
// mapped file and almost nothing in the heap.
func TestMemoryAccountsForTheHeap(t *testing.T) {
	const n, dim = 6000, 32
	rng := rand.New(rand.NewPCG(5, 6))
	es := syntheticEntries(rng, 1, n, dim)
	for i := range es {
		es[i].Doc = &Document{ID: "doc_" + string(rune('a'+i%26)) + es[i].Text[:8]}
	}
	// Twice: what earlier tests left in sync.Pools survives one collection
	// (as the pools' victims) and would be freed during the measurement.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	x := New("m", dim)
	x.graphFrom = 0
	must(t, x.Add(es...))
	es = nil //nolint:ineffassign // let the entries go before the heap is measured
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	heap, mapped := memoryTotals(x.Memory())
	t.Logf("heap grew %d bytes, Memory accounts for %d (%.0f%%), %d mapped", grown, heap, 100*float64(heap)/float64(grown), mapped)
	if mapped != 0 {
		t.Errorf("%d bytes reported mapped before any snapshot", mapped)
	}
	if heap < grown*7/10 || heap > grown*13/10 {
		t.Errorf("Memory accounts for %d heap bytes of %d", heap, grown)
	}

	must(t, x.WriteSnapshot(filepath.Join(t.TempDir(), "x.idx"), 1))
	parts := x.Memory()
	heap2, mapped2 := memoryTotals(parts)
	t.Logf("after the snapshot: %d heap, %d mapped: %+v", heap2, mapped2, parts)
	// Every page is in the file, the last too though it is not full
	// (until the writer appends to it); only the list of the slots of
	// each language (one here, with fewer slots than listedLangMax) stays
	// in the heap; every posting is in the file.
	inFile := map[string]int64{MemVectors: 0, MemCodes: 0, MemSlots: 4 * 8192, MemPostings: 0}
	for _, p := range parts {
		if most, ok := inFile[p.Part]; ok && (p.Heap > most || p.Mapped == 0) {
			t.Errorf("%s: %d bytes in the heap (at most %d), %d mapped", p.Part, p.Heap, most, p.Mapped)
		}
	}
	if heap2 > heap/4 {
		t.Errorf("the index keeps %d of its %d heap bytes after moving onto its snapshot", heap2, heap)
	}
}

// TestSmallOwnersLoadSmall loads the snapshot of an owner of 100 chunks,
// each a document of its own, then with a segment of 24 more (at 25 the
// save writes the snapshot whole instead), many times over, as a server
// with many customers loads theirs, and checks what each load adds to the
// heap: the IDs' bytes were copied into a 64 KB block an owner (88 KB in
// all for the snapshot alone, now 21 KB), and the segment's postings into
// a 512 KiB one (765 KB with a segment of 40, then 300 KB).
func TestSmallOwnersLoadSmall(t *testing.T) {
	const n, more, dim, loads = 100, 24, 8, 200
	rng := rand.New(rand.NewPCG(7, 8))
	es := syntheticEntries(rng, 1, n+more, dim)
	for i := range es {
		es[i].Doc = &Document{ID: fmt.Sprintf("doc_%026d", i)}
	}
	x := New("m", dim)
	must(t, x.Add(es[:n]...))
	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	perOwner := func() int64 {
		held := make([]*OwnerIndex, loads)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range held {
			y, _, err := ReadSnapshot(path)
			must(t, err)
			held[i] = y
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(held)
		return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / loads
	}
	// The documents (about 110 bytes each with their IDs), the index's
	// maps and tables.
	if b := perOwner(); b > 48<<10 {
		t.Errorf("each owner of %d chunks holds %d bytes of heap", n, b)
	} else {
		t.Logf("%d bytes of heap an owner of %d chunks", b, n)
	}
	must(t, x.Add(es[n:]...))
	if saved, err := x.Save(path, 2); err != nil || saved.Segment != 1 {
		t.Fatalf("saved %+v (%v), want a segment", saved, err)
	}
	// And the segment's slots in a page of the heap, its terms (most
	// of it: the synthetic text's are nearly all distinct) in the heap's
	// lexicon.
	if b := perOwner(); b > 400<<10 {
		t.Errorf("each owner of %d chunks, %d of them in a segment, holds %d bytes of heap", n+more, more, b)
	} else {
		t.Logf("%d bytes of heap an owner of %d chunks, %d of them in a segment", b, n+more, more)
	}
}
