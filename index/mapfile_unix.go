//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps a file read-only and returns its bytes and the function
// that unmaps them. A snapshot is decoded from the page cache this way
// rather than copied into the heap first: a copy of a file of hundreds of
// megabytes would stay in the process's anonymous memory, after the
// decode, until the garbage collector and the scavenger gave it back. The
// bytes must not be used, nor kept in anything decoded, after unmap.
func mapFile(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, func() {}, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: %d bytes do not fit in memory", path, size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	return b, func() { syscall.Munmap(b) }, nil
}
