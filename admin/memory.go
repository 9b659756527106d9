package admin

import (
	"fmt"
	"os"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// AvailableMemory is the memory a process here may use: the least of its
// cgroup's limit (a container's) and the machine's memory, and which of
// the two that is; 0 when neither is known.
func AvailableMemory() (uint64, string) {
	machine, err := memlimit.FromSystem()
	if err != nil {
		machine = 0
	}
	group, err := memlimit.FromCgroup()
	if err == nil && group > 0 && (machine == 0 || group < machine) {
		return group, "cgroup"
	}
	return machine, "machine"
}

// snapshotBytes is the size of the index snapshots and segments in dir.
func snapshotBytes(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		if !isSnapshotFile(e.Name()) {
			continue
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
	}
	return total
}

// snapshotCount counts the owners' snapshots in dir, a memory map each
// while the budget lasts (index.MapBudget).
func snapshotCount(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".idx") {
			n++
		}
	}
	return n
}

// isSnapshotFile reports whether name is an owner's snapshot (OWNER.idx)
// or one of its segments (OWNER.idx.seg1, …), not a write's leftover.
func isSnapshotFile(name string) bool {
	if strings.HasSuffix(name, ".idx") {
		return true
	}
	_, k, ok := strings.Cut(name, ".idx.seg")
	return ok && k != "" && strings.Trim(k, "0123456789") == ""
}

// checkMemory compares the index snapshots, which searches read in place
// through the page cache, with the memory available to hold them: past
// it, queries read parts of them from disk, and the first ones after a
// start wait longest (a million chunks' 3.9 GB snapshot loaded in
// 1.25-1.56 s with the page cache warm and 2.2-2.7 s with it cold; see
// docs/benchmarks.md).
func checkMemory(snapshots int64, available uint64, where string) Finding {
	f := Finding{Check: "memory", Status: StatusOK}
	switch {
	case available == 0:
		f.Detail = fmt.Sprintf("index snapshots take %s; the memory available is unknown here", bytesLabel(snapshots))
	case snapshots > int64(available):
		f.Status = StatusWarn
		f.Detail = fmt.Sprintf("index snapshots take %s, more than the %s's %s: searches read them in place, so they will read parts from disk, slowest after a start", bytesLabel(snapshots), where, bytesLabel(int64(available)))
		f.Fix = "give the machine more memory, or spread the owners over a cluster of nodes (docs/cluster.md)"
	default:
		f.Detail = fmt.Sprintf("index snapshots take %s of the %s's %s, which the page cache holds for searches beside the server", bytesLabel(snapshots), where, bytesLabel(int64(available)))
	}
	return f
}
