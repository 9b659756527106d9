package index

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// Past its budget of maps, a process reads snapshots into its heap: 300
// loaded within a budget of 100 add about 100 memory maps (each took one,
// and a tenant making customers could take the server past the kernel's
// limit), and read the same as the mapped ones.
func TestSnapshotsPastTheMapBudgetTakeNoMap(t *testing.T) {
	dir := t.TempDir()
	const owners, budget = 300, 100
	for i := range owners {
		x := testOpts.New("m", 8)
		must(t, x.Add(textEntries(1, 20, 8, fmt.Sprint("harbour", i))...))
		must(t, x.WriteSnapshot(filepath.Join(dir, fmt.Sprint(i, ".idx")), 20))
	}
	maps := NewSnapshotMaps(budget)
	opts := testOpts
	opts.Maps = maps
	before := processMaps(t)
	var held []*OwnerIndex
	for i := range owners {
		x, _, err := opts.ReadSnapshot(filepath.Join(dir, fmt.Sprint(i, ".idx")))
		if err != nil {
			t.Fatalf("owner %d (%d maps held): %v", i, maps.held.Load(), err)
		}
		if got := hitIDs(x.Search(Query{Text: fmt.Sprint("harbour", i), K: 5})); len(got) == 0 {
			t.Fatalf("owner %d found nothing of its own", i)
		}
		held = append(held, x)
	}
	if grew := processMaps(t) - before; grew > budget+50 {
		t.Errorf("loading %d snapshots within a budget of %d maps added %d memory maps", owners, budget, grew)
	}
	if maps.held.Load() != budget {
		t.Errorf("%d maps held, want the budget's %d", maps.held.Load(), budget)
	}
	runtime.KeepAlive(held)
}

// Past the budget, a snapshot large enough to be mapped is read into the
// heap instead, and reads the same.
func TestMapBudgetReadsIntoTheHeapPastIt(t *testing.T) {
	b := NewSnapshotMaps(2)
	for i := range 2 {
		if !b.take() {
			t.Fatalf("a budget of two refused take %d", i+1)
		}
	}
	if b.take() {
		t.Fatal("a budget of two let a third through")
	}
	b.release()
	if !b.take() {
		t.Fatal("a map given back was not there to take again")
	}
}
