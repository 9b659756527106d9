package index

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// filteredBruteForce is the reference of a filtered vector search: the k
// most similar of the entries whose index allowed accepts.
func filteredBruteForce(vecs [][]float32, allowed func(int) bool, q []float32, k int) []uint64 {
	var ids []uint64
	for _, i := range bruteForce(vecs, allowed, q, k) {
		ids = append(ids, uint64(i))
	}
	slices.Sort(ids)
	return ids
}

// TestFilteredSearchMatchesExact compares filtered vector searches with
// the exact filtered answer, for filters allowing 1%, 10% and 50% of the
// entries, through each way a filtered search can go: the scan of a small
// allowed set (exact, so equal), and the graph walk that keeps only
// allowed nodes (approximate: recall@10 at least 0.95).
func TestFilteredSearchMatchesExact(t *testing.T) {
	const n, dim, k, queries = 3000, 32, 10, 50
	vecs := testVectors(n+queries, dim, 5)
	for _, way := range []struct {
		name      string
		graphFrom int
		scanMax   int
		exact     bool
	}{
		{"scan of a small set", 0, math.MaxInt, true},
		{"scan without a graph", math.MaxInt, 0, true},
		{"graph walk", 0, 0, false},
	} {
		for _, groups := range []int{100, 10, 2} {
			t.Run(fmt.Sprintf("%s/1 in %d", way.name, groups), func(t *testing.T) {
				x := testOpts.New("m", dim)
				x.graphFrom, x.scanAllowedMax = way.graphFrom, way.scanMax
				must(t, x.Add(groupedEntries(vecs[:n], groups)...))
				allowed := func(i int) bool { return i%groups == 3 }
				found, total := 0, 0
				for _, q := range vecs[n:] {
					hits := x.Search(Query{Vector: q, K: k, Filter: groupIn(3)})
					got := hitIDs(hits)
					for _, id := range got {
						if !allowed(int(id)) {
							t.Fatalf("hit %d is not allowed by the filter", id)
						}
					}
					want := filteredBruteForce(vecs[:n], allowed, q, k)
					if way.exact && !slices.Equal(got, want) {
						t.Fatalf("got %v, want %v", got, want)
					}
					if len(got) != len(want) {
						t.Fatalf("%d hits, want %d", len(got), len(want))
					}
					for _, id := range want {
						if slices.Contains(got, id) {
							found++
						}
					}
					total += len(want)
				}
				if recall := float64(found) / float64(total); recall < 0.95 {
					t.Errorf("recall@%d %.3f against the exact filtered search", k, recall)
				}
			})
		}
	}
}

// TestFilteredHybridReturnsK: a filter allowing 1% of an owner's chunks
// still yields K hits from both sides, all of them allowed, and one that
// allows nothing yields none.
func TestFilteredHybridReturnsK(t *testing.T) {
	const n, dim = 3000, 16
	vecs := testVectors(n+1, dim, 9)
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	es := groupedEntries(vecs[:n], 100)
	for i := range es {
		es[i].Text = fmt.Sprintf("walrus report number %d", i)
	}
	must(t, x.Add(es...))
	for _, q := range []Query{
		{Vector: vecs[n], Text: "walrus report", K: 20},
		{Text: "walrus report", K: 20},
		{Vector: vecs[n], K: 20},
	} {
		q.Filter = groupIn(42)
		hits := x.Search(q)
		if len(hits) != 20 {
			t.Errorf("%d hits, want 20", len(hits))
		}
		for _, h := range hits {
			if h.ID%100 != 42 {
				t.Errorf("hit %d is not in group 42", h.ID)
			}
		}
		q.Filter = func(*Document) bool { return false }
		if hits := x.Search(q); len(hits) != 0 {
			t.Errorf("a filter allowing nothing found %d hits", len(hits))
		}
	}
}

// TestFilterSkipsEntriesWithoutDocument: an entry added without a document
// is found by plain searches and by no filtered one.
func TestFilterSkipsEntriesWithoutDocument(t *testing.T) {
	x := testOpts.New("m", 2)
	must(t, x.Add(Entry{ID: 1, Vector: []float32{1, 0}, Text: "walrus"}))
	must(t, x.Add(Entry{ID: 2, Vector: []float32{1, 0}, Text: "walrus", Doc: &Document{ID: "doc_a"}}))
	all := func(*Document) bool { return true }
	if got := hitIDs(x.Search(Query{Vector: []float32{1, 0}, Text: "walrus", K: 5, Filter: all})); !slices.Equal(got, []uint64{2}) {
		t.Errorf("filtered search found %v, want [2]", got)
	}
	if got := hitIDs(x.Search(Query{Vector: []float32{1, 0}, Text: "walrus", K: 5})); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("plain search found %v, want [1 2]", got)
	}
}

// docHits returns the IDs a filter on document id finds.
func docHits(x *OwnerIndex, docID string) []uint64 {
	return hitIDs(x.Search(Query{Vector: []float32{1, 0}, Text: "walrus", K: 100,
		Filter: func(d *Document) bool { return d.ID == docID }}))
}

// TestDocumentTableFollowsChanges: the table gains a document with its
// first chunk and loses it with its last, replacing a chunk keeps it,
// compaction renumbers it and a snapshot keeps it.
func TestDocumentTableFollowsChanges(t *testing.T) {
	x := testOpts.New("m", 2)
	doc := func(id string) *Document {
		return &Document{ID: id, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Metadata: map[string]string{"dept": id}}
	}
	a, b := doc("a"), doc("b")
	var es []Entry
	for i := range 3000 {
		d := a
		if i%3 != 0 {
			d = b
		}
		es = append(es, Entry{ID: uint64(i), Vector: []float32{1, 0}, Text: "walrus", Doc: d})
	}
	must(t, x.Add(es...))
	if got := len(docHits(x, "a")); got != 100 {
		t.Fatalf("document a: %d hits, want 100", got)
	}
	if x.Document(0).ID != "a" || x.Document(1).ID != "b" || x.Document(5000) != nil {
		t.Fatal("Document does not return the entries' documents")
	}

	// Delete every chunk of b but one: b stays; then the last: b goes.
	var bIDs []uint64
	for i := 1; i < 3000; i++ {
		if i%3 != 0 {
			bIDs = append(bIDs, uint64(i))
		}
	}
	x.Delete(bIDs[1:]...) // 1,999 deletes of 3,000: compaction runs
	if x.dead != 0 {
		t.Fatalf("%d deleted slots: compaction did not run", x.dead)
	}
	if got := docHits(x, "b"); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("after compaction document b finds %v, want [1]", got)
	}
	x.Delete(1)
	if got := docHits(x, "b"); len(got) != 0 {
		t.Fatalf("document b is gone but finds %v", got)
	}
	if _, ok := x.docOf["b"]; ok {
		t.Error("the writer still counts document b")
	}

	// Replacing a chunk of a keeps a.
	must(t, x.Add(Entry{ID: 0, Vector: []float32{1, 0}, Text: "walrus again", Doc: a}))
	if got := len(docHits(x, "a")); got != 100 {
		t.Fatalf("document a after a replacement: %d hits, want 100", got)
	}

	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if got, want := docHits(y, "a"), docHits(x, "a"); !slices.Equal(got, want) {
		t.Errorf("after a snapshot document a finds %v, want %v", got, want)
	}
	if got := docHits(y, "b"); len(got) != 0 {
		t.Errorf("a deleted document came back from the snapshot: %v", got)
	}
	d := y.Document(0)
	if d == nil || d.ID != "a" || !d.CreatedAt.Equal(a.CreatedAt) || d.Metadata["dept"] != "a" {
		t.Errorf("document a read back as %+v", d)
	}
	if len(y.docIndex()) != 1 || y.gen.nDocs != 1 {
		t.Errorf("the snapshot holds %d documents (%d live), want 1", y.gen.nDocs, len(y.docIndex()))
	}
}

// TestVersionPinsSearches: a search through Query.At reads that version
// after newer ones are published, including the filter's document table,
// and Superseded says when one is.
func TestVersionPinsSearches(t *testing.T) {
	x := testOpts.New("m", 2)
	old := &Document{ID: "old", Metadata: map[string]string{"v": "1"}}
	must(t, x.Add(Entry{ID: 1, Vector: []float32{1, 0}, Text: "walrus", Doc: old}))
	ver := x.Current()
	select {
	case <-ver.Superseded():
		t.Fatal("the current version is superseded")
	default:
	}
	repl := &Document{ID: "new", Metadata: map[string]string{"v": "2"}}
	must(t, x.Commit(func() error {
		x.Delete(1)
		return x.Add(Entry{ID: 2, Vector: []float32{1, 0}, Text: "walrus", Doc: repl})
	}))
	select {
	case <-ver.Superseded():
	default:
		t.Fatal("a commit published a version but the old one is not superseded")
	}
	v2 := func(d *Document) bool { return d.Metadata["v"] == "2" }
	q := Query{Vector: []float32{1, 0}, Text: "walrus", K: 5, At: ver}
	if got := hitIDs(x.Search(q)); !slices.Equal(got, []uint64{1}) {
		t.Errorf("the pinned version finds %v, want [1]", got)
	}
	q.Filter = v2
	if got := x.Search(q); len(got) != 0 {
		t.Errorf("the pinned version's documents include the new one: %v", got)
	}
	q.At = Version{}
	if got := hitIDs(x.Search(q)); !slices.Equal(got, []uint64{2}) {
		t.Errorf("the latest version finds %v, want [2]", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a version of another index was accepted")
		}
	}()
	testOpts.New("m", 2).Search(Query{Vector: []float32{1, 0}, K: 1, At: ver})
}

// TestFilteredSearchDuringReplace: while a Commit replaces one document
// with another, filtered searches see the old document's chunks or the
// new one's, whole, never both or neither.
func TestFilteredSearchDuringReplace(t *testing.T) {
	const dim, chunks, rounds = 8, 40, 30
	x := testOpts.New("m", dim)
	x.graphFrom = 0
	// Other documents, so the filtered one is a small part of the owner.
	must(t, x.Add(groupedEntries(testVectors(500, dim, 3), 50)...))
	version := func(v int) []Entry {
		d := &Document{ID: fmt.Sprintf("doc_v%d", v), Metadata: map[string]string{"external": "manual"}}
		es := textEntries(uint64(10000*v), chunks, dim, "walrus")
		for i := range es {
			es[i].Doc = d
		}
		return es
	}
	must(t, x.Add(version(1)...))
	manual := func(d *Document) bool { return d.Metadata["external"] == "manual" }
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			hits := x.Search(Query{Vector: testVectors(1, dim, 99)[0], Text: "walrus", K: 100, Filter: manual})
			if len(hits) != chunks || hits[0].ID/10000 != hits[len(hits)-1].ID/10000 {
				t.Errorf("a filtered search found %d hits, of versions %v", len(hits), versionsOf(hits))
				return
			}
			n++
		}
	}()
	for v := 2; v <= rounds; v++ {
		must(t, x.Commit(func() error {
			x.Delete(entryIDs(version(v - 1))...)
			return x.Add(version(v)...)
		}))
	}
	close(stop)
	t.Logf("%d filtered searches during %d replacements", <-done, rounds-1)
}

func versionsOf(hits []Hit) []uint64 {
	var vs []uint64
	for _, h := range hits {
		if v := h.ID / 10000; !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return vs
}

// TestDocumentsOfALoadedSnapshot: a load leaves the documents by ID to the
// first write, which then finds them: a chunk of a document the snapshot
// holds joins it, the last chunk of one takes it away, and a compaction
// right after the load renumbers them from the loaded table.
func TestDocumentsOfALoadedSnapshot(t *testing.T) {
	x := testOpts.New("m", 2)
	a, b := &Document{ID: "a"}, &Document{ID: "b"}
	var es []Entry
	for i := range 6 {
		es = append(es, Entry{ID: uint64(i), Vector: []float32{1, 0}, Text: "walrus", Doc: a})
	}
	es = append(es, Entry{ID: 6, Vector: []float32{1, 0}, Text: "walrus", Doc: b})
	must(t, x.Add(es...))
	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if y.docOf != nil {
		t.Error("the load made the documents by ID, which only writes use")
	}

	must(t, y.Add(Entry{ID: 7, Vector: []float32{1, 0}, Text: "walrus", Doc: &Document{ID: "a"}}))
	if y.gen.nDocs != 2 || y.Document(7) != y.Document(0) {
		t.Fatalf("a new chunk of document a made another document: %d documents", y.gen.nDocs)
	}
	y.Delete(6)
	if _, ok := y.docIndex()["b"]; ok || len(docHits(y, "b")) != 0 {
		t.Error("document b outlived its last chunk")
	}
	y.Delete(0, 1, 2)

	z, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	z.mu.Lock()
	z.rebuild()
	z.mu.Unlock()
	if z.gen.nDocs != 2 || z.Document(3) == nil || z.Document(3).ID != "a" {
		t.Fatalf("compacted after a load: %d documents, chunk 3's is %+v", z.gen.nDocs, z.Document(3))
	}
	if got := docHits(z, "a"); len(got) != 6 {
		t.Errorf("document a after the compaction finds %v, want its 6 chunks", got)
	}
	must(t, z.Add(Entry{ID: 8, Vector: []float32{1, 0}, Text: "walrus", Doc: &Document{ID: "a"}}))
	if z.gen.nDocs != 2 {
		t.Errorf("a new chunk of document a after the compaction made another document: %d", z.gen.nDocs)
	}
}
