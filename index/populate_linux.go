package index

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// populate has the kernel map into the process those of b's pages that
// the page cache holds (Linux 5.14 and later; an older kernel's error
// ends the prefault, as advice not taken). It reads nothing from the
// file: a page not cached is left for a search to fault in, as it would
// have been anyway, rather than read now in the first queries' way and
// in the place of pages they need, where memory is short of the files.
func populate(b []byte) error {
	page := os.Getpagesize()
	resident := make([]byte, (len(b)+page-1)/page)
	if err := mincore(b, resident); err != nil {
		return err
	}
	for i := 0; i < len(resident); {
		if resident[i]&1 == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(resident) && resident[j]&1 != 0 {
			j++
		}
		if err := unix.Madvise(b[i*page:min(j*page, len(b))], unix.MADV_POPULATE_READ); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// mincore sets the low bit of resident[i] when b's page i is in the page
// cache (mincore(2); x/sys has no wrapper for it on Linux).
func mincore(b, resident []byte) error {
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(resident))))
	if errno != 0 {
		return errno
	}
	return nil
}
