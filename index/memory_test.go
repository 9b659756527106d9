package index

import (
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
	const n, dim = 20000, 64
	rng := rand.New(rand.NewPCG(5, 6))
	es := syntheticEntries(rng, 1, n, dim)
	for i := range es {
		es[i].Doc = &Document{ID: "doc_" + string(rune('a'+i%26)) + es[i].Text[:8]}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	x := New("m", dim)
	x.graphFrom = 0
	must(t, x.Add(es...))
	es = nil
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
	for _, p := range parts {
		switch p.Part {
		case MemVectors, MemCodes, MemSlots, MemPostings:
			// Only the last page, which is not full, stays in the heap.
			if p.Heap > p.Mapped/4 {
				t.Errorf("%s: %d bytes in the heap, %d mapped", p.Part, p.Heap, p.Mapped)
			}
		}
	}
	if heap2 > heap/4 {
		t.Errorf("the index keeps %d of its %d heap bytes after moving onto its snapshot", heap2, heap)
	}
}
