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

// MapBudget is how many snapshots a process whose kernel allows limit
// memory maps (MaxMapCount) maps at most; it reads the others into its
// heap (see SnapshotMaps).
func MapBudget(limit int) int { return max(1000, (limit-mapsReserve)/2) }
