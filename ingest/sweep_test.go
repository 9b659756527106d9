package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// Upload sessions that ended are removed from the store, at start and
// then at every maintenance tick, once they have been ended for
// store.EndedSessionKept; the documents uploaded through them stay. The
// original files that lost their document while the server ran go at
// the ticks too, not only at the next start.
func TestEndedSessionsAndOrphanedFilesAreCollected(t *testing.T) {
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

	p, _, err := st.CreateProject("acme")
	if err != nil {
		t.Fatal(err)
	}
	session := func(ttl time.Duration) (*store.Session, string) {
		t.Helper()
		sess, token, err := st.CreateSession(store.Session{ProjectID: p.ID, OwnerID: p.ID}, ttl, store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		return sess, token
	}
	gone := func(token string) bool {
		_, err := st.SessionByToken(token)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return errors.Is(err, store.ErrNotFound)
	}
	// Left by the last run: a session that ended while the server was
	// down, long enough ago to go; one that ended just before.
	old, oldToken := session(time.Minute)
	_, recentToken := session(time.Hour)
	_, aliveToken := session(5 * time.Hour)
	d := &store.Document{ProjectID: p.ID, OwnerID: p.ID, Name: "through a link", Format: "text",
		Metadata: map[string]string{store.SessionMetaKey: old.ID}}
	if _, err := st.CreateDocument(d, store.Bytes([]byte("uploaded through the link")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	advance(time.Hour + 2*time.Minute)

	e := New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1, SnapshotInterval: 20 * time.Millisecond}, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context())
	if !gone(oldToken) || gone(recentToken) || gone(aliveToken) {
		t.Fatalf("after start: old swept %v, recent %v, alive %v; want the old one alone swept", gone(oldToken), gone(recentToken), gone(aliveToken))
	}
	if got, err := st.Document(d.ID); err != nil || got.Metadata[store.SessionMetaKey] != old.ID {
		t.Fatalf("the document uploaded through the swept session = %+v, %v", got, err)
	}

	// While the server runs: a file a delete could not remove, say.
	orphan := filepath.Join(dir, "files", p.ID, strings.Repeat("0", 64))
	if err := os.MkdirAll(filepath.Dir(orphan), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("no document refers to this"), 0o600); err != nil {
		t.Fatal(err)
	}
	advance(time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for !gone(recentToken) {
		if time.Now().After(deadline) {
			t.Fatal("an hour on, the session that ended before the start is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		if _, err := os.Stat(orphan); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphaned file is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if gone(aliveToken) {
		t.Fatal("the session alive was swept")
	}
}
