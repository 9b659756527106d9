package index

import "golang.org/x/sys/unix"

// populate has the kernel map b's pages into the process now, reading
// from the file those the page cache does not hold (Linux 5.14 and
// later; an older kernel's error ends the prefault, as advice not taken).
func populate(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_READ) }
