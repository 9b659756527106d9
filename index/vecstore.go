package index

import (
	"fmt"
	"runtime"
	"sync"
)

// VectorFiles keeps the float32 vectors of the pages allocated through
// it in memory-mapped scratch files in one directory, instead of on the
// Go heap (see Options.Vectors). A process has one for all its indexes.
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
//
// It hands the pages' vectors out from a few large scratch files, not
// one a page: each file is a memory map of the process, and the kernel
// allows a process 65,530 of them unless told otherwise, past which the
// Go runtime cannot grow the heap and the process dies. With a file a
// page, 5,000 customers of 20 chunks just uploaded held 10,000; with the
// limit lowered to 5,000, 3,000 such customers killed the server, which
// died again rebuilding them at each start.
type VectorFiles struct {
	dir   string
	arena scratchArena
}

// NewVectorFiles returns the vector files of dir, once it has checked
// that dir can hold one.
func NewVectorFiles(dir string) (*VectorFiles, error) {
	_, unmap, err := mapScratch(dir, 1024)
	if err != nil {
		return nil, fmt.Errorf("index: vector dir: %w", err)
	}
	unmap()
	return &VectorFiles{dir: dir}, nil
}

// alloc returns room for n floats for pg: in a scratch file of vf, given
// back once pg is unreachable, or, when vf is nil or its file cannot be
// made, on the heap.
//
// Nothing may use a vector of a mapped page after the page is
// unreachable: readers reach vectors through a view or generation that
// holds the page, and pages.dot keeps the page alive until it is done.
func (vf *VectorFiles) alloc(pg *page, n int) []float32 {
	if vf != nil && n > 0 {
		if v, err := vf.arena.alloc(vf.dir, n); err == nil {
			runtime.AddCleanup(pg, vf.arena.release, v)
			pg.scratchVecs = true
			return v
		}
	}
	return make([]float32, n)
}

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
	rest []float32           // the end of the last file, not handed out yet
	free map[int][][]float32 // blocks given back, zeroed, by length
}

// scratchBlockFloats rounds blocks up to whole memory pages.
const scratchBlockFloats = 4096 / 4

func (a *scratchArena) alloc(dir string, n int) ([]float32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
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
