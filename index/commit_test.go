package index

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// stuckLimit is how long a test lets a search run before calling it stuck
// behind a writer. It detects a failure; nothing waits for it to pass.
const stuckLimit = 10 * time.Second

// searchSoon runs q on x in another goroutine and fails the test if it
// does not return within stuckLimit.
func searchSoon(t *testing.T, x *OwnerIndex, q Query) []Hit {
	t.Helper()
	done := make(chan []Hit, 1)
	go func() { done <- x.Search(q) }()
	select {
	case hits := <-done:
		return hits
	case <-time.After(stuckLimit):
		t.Fatal("a search waited for a writer")
		return nil
	}
}

// textEntries returns n entries from id on, all containing word, with
// vectors from testVectors.
func textEntries(id uint64, n, dim int, word string) []Entry {
	es := entries(testVectors(n, dim, id), id)
	for i := range es {
		es[i].Text = fmt.Sprintf("%s chunk %d", word, i)
	}
	return es
}

func hitIDs(hits []Hit) []uint64 {
	ids := make([]uint64, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	slices.Sort(ids)
	return ids
}

func entryIDs(es []Entry) []uint64 {
	ids := make([]uint64, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	slices.Sort(ids)
	return ids
}

func TestSearchTakesNoWriterLock(t *testing.T) {
	const dim = 8
	x := testOpts.New("m", dim)
	must(t, x.Add(textEntries(1, 10, dim, "walrus")...))
	x.mu.Lock() // as a writer in the middle of a batch
	defer x.mu.Unlock()
	if hits := searchSoon(t, x, Query{Vector: testVectors(1, dim, 9)[0], Text: "walrus", K: 5}); len(hits) != 5 {
		t.Fatalf("%d hits, want 5", len(hits))
	}
	if x.Len() != 10 {
		t.Fatalf("Len %d", x.Len())
	}
}

// commitInSteps runs, in a Commit on another goroutine, a delete of old
// and an add of the first half of repl; then it waits for release before
// adding the rest. It returns once the first half is in, and a channel
// that yields the Commit's result.
func commitInSteps(t *testing.T, x *OwnerIndex, old, repl []Entry, release <-chan struct{}) <-chan error {
	t.Helper()
	halfway := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- x.Commit(func() error {
			x.Delete(entryIDs(old)...)
			if err := x.Add(repl[:len(repl)/2]...); err != nil {
				return err
			}
			close(halfway)
			<-release
			return x.Add(repl[len(repl)/2:]...)
		})
	}()
	select {
	case <-halfway:
	case err := <-done:
		t.Fatalf("commit ended before its first half: %v", err)
	}
	return done
}

func TestCommitIsOneVersion(t *testing.T) {
	for _, tc := range []struct {
		name      string
		graphFrom int
		old, repl int
	}{
		{"scan", graphThreshold, 40, 60},
		{"graph", 0, 300, 400},
		// The commit takes the owner past the graph threshold: the graph is
		// built mid-commit and published with it.
		{"switch to graph", 100, 80, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const dim = 8
			x := testOpts.New("m", dim)
			x.graphFrom = tc.graphFrom
			old := textEntries(1, tc.old, dim, "walrus")
			must(t, x.Add(old...))
			repl := textEntries(1000, tc.repl, dim, "walrus")
			q := Query{Vector: testVectors(1, dim, 7)[0], Text: "walrus", K: 1000}

			release := make(chan struct{})
			done := commitInSteps(t, x, old, repl, release)
			if got := hitIDs(searchSoon(t, x, q)); !slices.Equal(got, entryIDs(old)) {
				t.Errorf("during the commit a search found %v, want the old version %v", got, entryIDs(old))
			}
			if x.Len() != len(old) {
				t.Errorf("Len %d during the commit, want %d", x.Len(), len(old))
			}
			close(release)
			must(t, <-done)
			if got := hitIDs(x.Search(q)); !slices.Equal(got, entryIDs(repl)) {
				t.Errorf("after the commit a search found %v, want %v", got, entryIDs(repl))
			}
		})
	}
}

func TestSnapshotDuringCommitHoldsPublishedVersion(t *testing.T) {
	const dim = 8
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	old := textEntries(1, 100, dim, "walrus")
	must(t, x.Add(old...))
	release := make(chan struct{})
	done := commitInSteps(t, x, old[:50], textEntries(1000, 100, dim, "walrus"), release)
	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	close(release)
	must(t, <-done)

	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if !slices.Equal(y.IDs(), entryIDs(old)) {
		t.Fatalf("snapshot holds %v, want the published version %v", y.IDs(), entryIDs(old))
	}
	q := Query{Vector: old[3].Vector, Text: "walrus", K: 1000}
	if got := hitIDs(y.Search(q)); !slices.Equal(got, entryIDs(old)) {
		t.Fatalf("reloaded snapshot finds %v", got)
	}
}

// TestReplaceSeenWhole replaces a document's chunks over and over, each
// time in one Commit, while searches run: every search must find exactly
// one version's chunks.
func TestReplaceSeenWhole(t *testing.T) {
	const dim, chunks, rounds = 8, 30, 60
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	must(t, x.Add(textEntries(0, 200, dim, "filler")...)) // other documents, IDs < 1000
	version := func(r int) []Entry { return textEntries(uint64(1000*(r+1)), chunks, dim, "walrus") }
	must(t, x.Add(version(0)...))

	stop := make(chan struct{})
	searched := make(chan int)
	go func() {
		n := 0
		q := Query{Vector: testVectors(1, dim, 5)[0], Text: "walrus", K: 1000}
		for {
			select {
			case <-stop:
				searched <- n
				return
			default:
			}
			ids := slices.DeleteFunc(hitIDs(x.Search(q)), func(id uint64) bool { return id < 1000 })
			if len(ids) != chunks || ids[0]/1000 != ids[len(ids)-1]/1000 {
				t.Errorf("a search saw %d chunks of versions %d to %d", len(ids), ids[0]/1000, ids[len(ids)-1]/1000)
			}
			n++
		}
	}()
	for r := 1; r < rounds; r++ {
		prev, next := version(r-1), version(r)
		must(t, x.Commit(func() error {
			x.Delete(entryIDs(prev)...)
			return x.Add(next...)
		}))
	}
	close(stop)
	t.Logf("%d searches during %d replacements", <-searched, rounds-1)
}
