package index

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMapBudget: half of what the kernel's limit leaves beside the rest of
// the process, and at least a thousand.
func TestMapBudget(t *testing.T) {
	for _, c := range []struct{ limit, want int }{
		{65530, 30265},
		{262144, 128572},
		{0, 1000}, // the limit unknown
	} {
		if got := MapBudget(c.limit); got != c.want {
			t.Errorf("MapBudget(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
	if n := MaxMapCount(); n <= 0 {
		t.Errorf("the kernel's limit read as %d", n)
	}
}

// processMaps counts this process's memory maps.
func processMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatalf("reading the process's maps: %v", err)
	}
	return strings.Count(string(b), "\n")
}

// Small owners' snapshots cost no memory map: 600 of them loaded at once
// (a SaaS's customers, each with a few chunks) leave the process's maps
// as they were, where each took one, and a tenant making customers could
// take the server past the kernel's limit.
func TestSmallSnapshotsTakeNoMap(t *testing.T) {
	dir := t.TempDir()
	const owners = 600
	for i := range owners {
		x := New("m", 8)
		must(t, x.Add(textEntries(1, 20, 8, fmt.Sprint("harbour", i))...))
		must(t, x.WriteSnapshot(filepath.Join(dir, fmt.Sprint(i, ".idx")), 20))
	}
	before := processMaps(t)
	held := make([]*OwnerIndex, 0, owners)
	for i := range owners {
		x, _, err := ReadSnapshot(filepath.Join(dir, fmt.Sprint(i, ".idx")))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, x)
	}
	if grew := processMaps(t) - before; grew > 50 {
		t.Errorf("loading %d small snapshots added %d memory maps", owners, grew)
	}
	if len(held) != owners {
		t.Fatal("the indexes were dropped")
	}
}

// Past the budget, a snapshot large enough to be mapped is read into the
// heap instead, and reads the same.
func TestMapBudgetReadsIntoTheHeapPastIt(t *testing.T) {
	b := &mapBudget{limit: 2}
	if !b.take() || !b.take() {
		t.Fatal("a budget of two refused one of its first two")
	}
	if b.take() {
		t.Fatal("a budget of two let a third through")
	}
	b.release()
	if !b.take() {
		t.Fatal("a map given back was not there to take again")
	}
}
