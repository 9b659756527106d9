package index

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// vectorDir, when set, is the directory of the files that hold the
// float32 vectors (see SetVectorDir).
var vectorDir atomic.Pointer[string]

// SetVectorDir keeps the float32 vectors of every page allocated from now
// on in memory-mapped scratch files in dir, instead of on the Go heap; ""
// puts them back on the heap. It checks that dir can hold one.
//
// The trade: the graph and the scans read only the vectors' int8 codes
// (see quant.go), and the floats are touched only to re-score a search's
// few best candidates and when a snapshot is written or the graph
// rebuilt. Mapped, they cost no anonymous memory (at 384 dimensions,
// 1.5 KB of heap per chunk, twice that with the garbage collector's
// headroom): the kernel keeps as many of their pages cached as memory
// allows, and a re-score that finds one evicted waits for a disk read.
// The files are scratch, unlinked when created; snapshots still hold the
// vectors. A page whose file cannot be made (the disk is full) keeps its
// vectors on the heap.
func SetVectorDir(dir string) error {
	if dir != "" {
		if _, unmap, err := mapScratch(dir, 1024); err != nil {
			return fmt.Errorf("index: vector dir: %w", err)
		} else {
			unmap()
		}
	}
	vectorDir.Store(&dir)
	return nil
}

// allocVectors returns room for n floats for pg: mapped (see SetVectorDir)
// and unmapped once pg is unreachable, or on the heap.
//
// Nothing may use a vector of a mapped page after the page is
// unreachable: readers reach vectors through a view or generation that
// holds the page, and pages.dot keeps the page alive until it is done.
func allocVectors(pg *page, n int) []float32 {
	if d := vectorDir.Load(); d != nil && *d != "" && n > 0 {
		if v, unmap, err := mapScratch(*d, n); err == nil {
			runtime.AddCleanup(pg, func(unmap func()) { unmap() }, unmap)
			pg.scratchVecs = true
			return v
		}
	}
	return make([]float32, n)
}
