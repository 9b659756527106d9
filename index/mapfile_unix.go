//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapFile maps an open file privately and returns its bytes and the
// function that unmaps them. Its pages are the page cache's until written:
// a write copies the page into the process's memory and never reaches the
// file (MAP_PRIVATE), which is how a snapshot read in place takes the few
// changes a writer makes to it (see mapping). The bytes must not be used
// after unmap; the file may be closed before.
func mapFile(f *os.File) ([]byte, func(), error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, func() {}, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: %d bytes do not fit in memory", f.Name(), size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	return b, func() { syscall.Munmap(b) }, nil
}

// adviseWillNeed asks the kernel to start reading a mapping's pages from
// its file, and returns without waiting for them (see readAhead). An
// error is only advice not taken: it costs speed, not correctness.
func adviseWillNeed(b []byte) error {
	// madvise refuses a start inside a page: the rest of that page is
	// left to the readers' faults, or to the advice on the bytes before
	// b, whose length the kernel rounds up to whole pages.
	page := os.Getpagesize()
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % uintptr(page)); r != 0 {
		if page-r >= len(b) {
			return nil
		}
		b = b[page-r:]
	}
	return unix.Madvise(b, unix.MADV_WILLNEED)
}
