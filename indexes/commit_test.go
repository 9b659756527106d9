package indexes

import (
	"fmt"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
)

// stuckLimit is how long a test lets a search run before calling it stuck
// behind a commit. It detects a failure; nothing waits for it to pass.
const stuckLimit = 10 * time.Second

// chunkEntries returns entries first, first+1, … first+n-1 about text.
func chunkEntries(first uint64, n int, text string) []index.Entry {
	es := make([]index.Entry, n)
	for i := range es {
		es[i] = index.Entry{ID: first + uint64(i), Vector: []float32{0.6, 0.8}, Text: text}
	}
	return es
}

func ids(es []index.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// searchOwner gets owner's index and searches it on another goroutine, and
// fails the test if that does not finish within stuckLimit. It returns the
// hits' IDs in ascending order.
func searchOwner(t *testing.T, r *Set, owner string, q index.Query) []uint64 {
	t.Helper()
	type result struct {
		hits []index.Hit
		err  error
	}
	done := make(chan result, 1)
	go func() {
		x, err := r.Get(owner)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{hits: x.Search(q)}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatal(res.err)
		}
		var got []uint64
		for _, h := range res.hits {
			got = append(got, h.ID)
		}
		slices.Sort(got)
		return got
	case <-time.After(stuckLimit):
		t.Fatal("a search waited for a commit of the same owner")
		return nil
	}
}

// TestIndexSearchDuringCommit blocks a document's replacement half-way
// through its Update: a search of the same owner finishes meanwhile and
// sees the old chunks, none of the new; once the Update returns, a search
// sees the new chunks and none of the old.
func TestIndexSearchDuringCommit(t *testing.T) {
	r := testIndexes(t)
	const owner = "cus_a"
	old, repl := chunkEntries(1, 20, "walrus on sea ice"), chunkEntries(100, 30, "walrus on sea ice")
	if err := r.Update(owner, func(x *index.OwnerIndex) (uint64, error) { return 20, x.Add(old...) }); err != nil {
		t.Fatal(err)
	}

	halfway, release := make(chan struct{}), make(chan struct{})
	committed := make(chan error, 1)
	go func() {
		committed <- r.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
			x.Delete(ids(old)...)
			if err := x.Add(repl[:15]...); err != nil {
				return 0, err
			}
			close(halfway)
			<-release
			return 129, x.Add(repl[15:]...)
		})
	}()
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release) // let a failed test's Update finish
		}
	})
	<-halfway

	q := index.Query{Vector: []float32{0.6, 0.8}, Text: "walrus", K: 100}
	if got := searchOwner(t, r, owner, q); !slices.Equal(got, ids(old)) {
		t.Errorf("during the commit a search found %v, want the old chunks %v", got, ids(old))
	}
	close(release)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if got := searchOwner(t, r, owner, q); !slices.Equal(got, ids(repl)) {
		t.Errorf("after the commit a search found %v, want the new chunks %v", got, ids(repl))
	}
}

// TestIndexReplaceVisibleTogether replaces a document's chunks in one
// Update after another while a search loop runs on the index it got
// before: each search finds one version's chunks, never a mix, never none.
func TestIndexReplaceVisibleTogether(t *testing.T) {
	r := testIndexes(t)
	const owner, chunks, rounds = "cus_a", 12, 50
	version := func(v int) []index.Entry { return chunkEntries(uint64(100*v), chunks, "walrus on sea ice") }
	if err := r.Update(owner, func(x *index.OwnerIndex) (uint64, error) { return 0, x.Add(version(1)...) }); err != nil {
		t.Fatal(err)
	}
	x, err := r.Get(owner)
	if err != nil {
		t.Fatal(err)
	}

	stop, searched := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		q := index.Query{Vector: []float32{0.6, 0.8}, Text: "walrus", K: 100}
		for {
			select {
			case <-stop:
				searched <- n
				return
			default:
			}
			hits := x.Search(q)
			if len(hits) != chunks || hits[0].ID/100 != hits[len(hits)-1].ID/100 {
				t.Errorf("a search found %v", hits)
			}
			n++
		}
	}()
	for v := 2; v <= rounds; v++ {
		err := r.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
			x.Delete(ids(version(v - 1))...)
			return 0, x.Add(version(v)...)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	t.Logf("%d searches during %d replacements", <-searched, rounds-1)
}

// TestSnapshotOfManyOwnersCollectsOnce: saving every owner's whole
// snapshot gives the heap back with one forced collection for all of
// them, not one each (a stop with a thousand customers took 12-16 s so,
// against 3), and a save with nothing to write forces none.
func TestSnapshotOfManyOwnersCollectsOnce(t *testing.T) {
	r := testIndexes(t)
	const owners = 30
	for i := range owners {
		owner := fmt.Sprintf("cus_%d", i)
		must(t, r.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
			return uint64(i + 1), x.Add(chunkEntries(uint64(i*10+1), 3, "walrus")...)
		}))
	}
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := forced()
	must(t, r.SnapshotWhole())
	if n := forced() - before; n != 1 {
		t.Errorf("saving %d owners whole forced %d collections, want 1", owners, n)
	}
	for i := range owners {
		if x, _, err := index.ReadSnapshot(r.path(fmt.Sprintf("cus_%d", i))); err != nil || x.Len() != 3 {
			t.Fatalf("owner %d's snapshot: %v", i, err)
		}
	}
	before = forced()
	must(t, r.Snapshot())
	if n := forced() - before; n != 0 {
		t.Errorf("a save with nothing to write forced %d collections", n)
	}
}

// TestStopSavesOwnersTogether: a stop's saves of many owners overlap
// (much of each is waiting for its fsyncs: 3,000 customers took 7.5-8.6
// s one at a time), and every owner is saved all the same; the periodic
// passes, beside searches and uploads, save one at a time.
func TestStopSavesOwnersTogether(t *testing.T) {
	var saving func(string)
	r := testSet(t, newMemSource(), Options{Saving: func(owner string) { saving(owner) }})
	const owners = 20
	update := func(round uint64) {
		for i := range owners {
			must(t, r.Update(fmt.Sprintf("cus_%d", i), func(x *index.OwnerIndex) (uint64, error) {
				return round*100 + uint64(i), x.Add(chunkEntries(round*1000+uint64(i*10+1), 3, "walrus")...)
			}))
		}
	}
	var mu sync.Mutex
	inFlight, most, released := 0, 0, false
	second := make(chan struct{})
	patience := 5 * time.Second
	saving = func(string) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == 2 && !released {
			close(second)
			released = true
		}
		mu.Unlock()
		// The first save waits, a while at most, for another to be
		// under way: saved one at a time, none ever is.
		select {
		case <-second:
		case <-time.After(patience):
			mu.Lock()
			if !released { // the rest need not wait as long
				close(second)
				released = true
			}
			mu.Unlock()
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}
	update(1)
	must(t, r.SnapshotWhole())
	if most < 2 {
		t.Errorf("a stop saved %d owners one at a time", owners)
	}
	for i := range owners {
		if x, _, err := index.ReadSnapshot(r.path(fmt.Sprintf("cus_%d", i))); err != nil || x.Len() != 3 {
			t.Fatalf("owner %d's snapshot: %v", i, err)
		}
	}

	update(2)
	mu.Lock()
	most, released, second, patience = 0, false, make(chan struct{}), 200*time.Millisecond
	mu.Unlock()
	must(t, r.Snapshot())
	if most != 1 {
		t.Errorf("a periodic pass had %d saves under way at once", most)
	}
}
