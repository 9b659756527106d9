package index

import (
	"os"
	"strconv"
	"strings"
)

// mapsReserve is the memory maps a server needs besides its owners'
// snapshots, one each (read in place, see mapping): the Go runtime's
// heap, the scratch files of vectors, the database, the libraries, with
// room to spare.
const mapsReserve = 5000

// MaxMapCount is the kernel's limit on a process's memory maps
// (vm.max_map_count), 0 when unknown. Past it the Go runtime cannot
// grow the heap, and the process dies.
func MaxMapCount() int {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// MapsNeeded returns the vm.max_map_count a server needs to hold owners'
// indexes loaded when limit is below it, and 0 when it is not (or is
// unknown).
func MapsNeeded(owners, limit int) int {
	if need := owners + mapsReserve; limit > 0 && need > limit {
		return need
	}
	return 0
}
