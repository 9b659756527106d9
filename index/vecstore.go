package index

import (
	"fmt"
	"runtime"
	"sync"
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

// allocVectors returns room for n floats for pg: in a scratch file (see
// SetVectorDir), given back once pg is unreachable, or on the heap.
//
// Nothing may use a vector of a mapped page after the page is
// unreachable: readers reach vectors through a view or generation that
// holds the page, and pages.dot keeps the page alive until it is done.
func allocVectors(pg *page, n int) []float32 {
	if d := vectorDir.Load(); d != nil && *d != "" && n > 0 {
		if v, err := scratch.alloc(*d, n); err == nil {
			runtime.AddCleanup(pg, scratch.release, v)
			pg.scratchVecs = true
			return v
		}
	}
	return make([]float32, n)
}

// scratch hands out the pages' vectors from a few large scratch files,
// not one a page: each file is a memory map of the process, and the
// kernel allows a process 65,530 of them unless told otherwise, past
// which the Go runtime cannot grow the heap and the process dies. With a
// file a page, 5,000 customers of 20 chunks just uploaded held 10,000;
// with the limit lowered to 5,000, 3,000 such customers killed the
// server, which died again rebuilding them at each start.
var scratch scratchArena

// scratchFileFloats is the size of each scratch file: 64 MB, 43,690
// vectors of 384 dimensions.
const scratchFileFloats = 16 << 20

// scratchArena carves blocks out of scratch files, each block a whole
// number of memory pages so that a block given back can return its pages
// to the kernel alone, and keeps the blocks given back, by length, for the
// next pages of that size (an owner's pages come in a few sizes). Files
// are never unmapped: what a file holds beyond the blocks in use is
// either not yet touched or given back, so it costs address space only.
type scratchArena struct {
	mu   sync.Mutex
	dir  string
	rest []float32           // the end of the last file, not handed out yet
	free map[int][][]float32 // blocks given back, zeroed, by length
}

// scratchBlockFloats rounds blocks up to whole memory pages.
const scratchBlockFloats = 4096 / 4

func (a *scratchArena) alloc(dir string, n int) ([]float32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dir != dir {
		a.dir, a.rest, a.free = dir, nil, nil
	}
	if blocks := a.free[n]; len(blocks) > 0 {
		v := blocks[len(blocks)-1]
		a.free[n] = blocks[:len(blocks)-1]
		return v, nil
	}
	size := (n + scratchBlockFloats - 1) / scratchBlockFloats * scratchBlockFloats
	if len(a.rest) < size {
		file, _, err := mapScratch(dir, max(size, scratchFileFloats))
		if err != nil {
			// A full disk may still hold this one block.
			if file, _, err = mapScratch(dir, size); err != nil {
				return nil, err
			}
		}
		a.rest = file
	}
	v := a.rest[:n:size]
	a.rest = a.rest[size:]
	return v, nil
}

// release takes back the block of a page no longer reachable, its memory
// pages returned to the kernel (or, where that fails, zeroed), so that a
// block handed out again holds zeros as a new one does.
func (a *scratchArena) release(v []float32) {
	if !discardScratch(v[:cap(v)]) {
		clear(v[:cap(v)])
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.free == nil {
		a.free = make(map[int][][]float32)
	}
	a.free[len(v)] = append(a.free[len(v)], v)
}
