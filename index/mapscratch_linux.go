package index

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// mapScratch returns n float32s backed by a new file in dir, mapped
// shared and writable, and the function that unmaps them. The file is
// unlinked at once: the mapping keeps its blocks until it is unmapped, and
// a crash leaves nothing behind. Its blocks are allocated up front, so a
// full disk fails here rather than as a fault on a later write. Pages
// written through the mapping are the page cache's, not the process's
// anonymous memory: the kernel writes them back and drops them under
// memory pressure, and reads them in again when touched, as for any file.
func mapScratch(dir string, n int) ([]float32, func(), error) {
	f, err := os.CreateTemp(dir, "vectors-*")
	if err != nil {
		return nil, nil, fmt.Errorf("map vectors: %w", err)
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return nil, nil, fmt.Errorf("map vectors: %w", err)
	}
	size := 4 * n
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		return nil, nil, fmt.Errorf("map vectors: allocate %d bytes: %w", size, err)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map vectors: %w", err)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), func() { syscall.Munmap(b) }, nil
}

// discardScratch gives the memory pages of v, a block of a scratch file
// that starts and ends on page boundaries, back to the kernel, file blocks
// and all; they read as zeros after. It reports whether it could.
func discardScratch(v []float32) bool {
	if len(v) == 0 {
		return true
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	return syscall.Madvise(b, syscall.MADV_REMOVE) == nil
}
