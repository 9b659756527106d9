package admin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckMemory: doctor warns when the index snapshots, which searches
// read in place, are more than the memory there is to hold them.
func TestCheckMemory(t *testing.T) {
	if f := checkMemory(3<<30, 8<<30, "machine"); f.Status != StatusOK || !strings.Contains(f.Detail, "3.0 GiB of the machine's 8.0 GiB") {
		t.Errorf("3 GiB of snapshots on 8 GiB: %+v", f)
	}
	f := checkMemory(5<<30, 4<<30, "cgroup")
	if f.Status != StatusWarn || !strings.Contains(f.Detail, "more than the cgroup's 4.0 GiB") || !strings.Contains(f.Fix, "cluster") {
		t.Errorf("5 GiB of snapshots on 4 GiB: %+v", f)
	}
	if f := checkMemory(5<<30, 0, ""); f.Status != StatusOK || !strings.Contains(f.Detail, "unknown") {
		t.Errorf("the memory unknown: %+v", f)
	}
}

// TestSnapshotBytes counts snapshots and their segments, and nothing else
// of the index directory.
func TestSnapshotBytes(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"prj_a.idx": 1000, "prj_a.idx.seg1": 200, "cus_b.idx": 30, "prj_a.idx.tmp123": 5000, "prj_a.idx.seg2.tmp45": 600, "notes": 7} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := snapshotBytes(dir); got != 1230 {
		t.Errorf("snapshotBytes = %d, want 1230", got)
	}
	if got := snapshotBytes(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("snapshotBytes of no directory = %d", got)
	}
}

// TestAvailableMemory reads this machine's memory, or its container's.
func TestAvailableMemory(t *testing.T) {
	n, where := AvailableMemory()
	if n == 0 || (where != "machine" && where != "cgroup") {
		t.Fatalf("AvailableMemory() = %d, %q", n, where)
	}
}
