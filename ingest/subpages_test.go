package ingest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// Expired subpages go with their files, as do the files a crash left
// without a record: at start, and then at every maintenance tick.
func TestExpiredSubpagesAndOrphansAreCollected(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	now := time.Now()
	st.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }

	d := &store.Document{ProjectID: "prj_p", OwnerID: "cus_a", Name: "a.pdf", Format: "pdf"}
	if _, err := st.CreateDocument(d, store.Bytes([]byte("%PDF-")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	slice := func(first int, ttl time.Duration) string {
		t.Helper()
		sp, err := st.CreateSubpage(store.Subpage{ID: store.NewSubpageID(), ProjectID: "prj_p", OwnerID: "cus_a", DocumentID: d.ID,
			FirstPage: first, LastPage: first}, []byte("%PDF-subpage"), ttl, store.SubpageLimits{})
		if err != nil {
			t.Fatal(err)
		}
		return sp.ID + ".pdf"
	}
	subpages := filepath.Join(dir, "subpages")
	files := func() map[string]bool {
		entries, _ := os.ReadDir(subpages)
		names := map[string]bool{}
		for _, e := range entries {
			names[e.Name()] = true
		}
		return names
	}
	// Left by the last run: one expired while the server was down, a file
	// whose record a crash never committed, a temporary file cut short.
	downExpired, later, kept := slice(1, time.Minute), slice(2, time.Hour), slice(3, 3*time.Hour)
	orphan := store.NewSubpageID() + ".pdf"
	for _, name := range []string{orphan, ".tmp-42"} {
		if err := os.WriteFile(filepath.Join(subpages, name), []byte("%PDF-"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	advance(2 * time.Minute)

	e := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1, SnapshotInterval: 20 * time.Millisecond}, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context())
	if got := files(); len(got) != 2 || !got[later] || !got[kept] || got[downExpired] {
		t.Fatalf("after start, subpage files %v; want %s and %s alone", got, later, kept)
	}

	advance(time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for got := files(); len(got) != 1 || !got[kept]; got = files() {
		if time.Now().After(deadline) {
			t.Fatalf("an hour on, subpage files %v; want %s alone", got, kept)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
