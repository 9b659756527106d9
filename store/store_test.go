package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func TestKeysAuthenticateAndRevoke(t *testing.T) {
	s, _ := openTest(t)
	p, secret, err := s.CreateProject("acme")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Authenticate(secret)
	if err != nil || got.ID != p.ID {
		t.Fatalf("Authenticate = %v, %v; want project %s", got, err, p.ID)
	}
	if _, _, err := s.Authenticate(secret + "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("wrong key: err = %v, want ErrNotFound", err)
	}
	second, key, err := s.CreateKey(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := s.Keys(p.ID)
	if len(keys) != 2 || keys[1].ID != key.ID || keys[1].Hint != second[:keyHintLen] {
		t.Fatalf("Keys = %+v", keys)
	}
	if _, err := s.RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Authenticate(second); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoked key: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Authenticate(secret); err != nil {
		t.Fatalf("other key stopped working: %v", err)
	}
	if _, err := s.RevokeKey("key_nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke unknown: err = %v", err)
	}
}

func TestOpenTwiceIsLocked(t *testing.T) {
	_, dir := openTest(t)
	if _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
}

func newDoc(t *testing.T, s *Store, owner, text string) (*Document, *Job) {
	t.Helper()
	d := &Document{ProjectID: "prj_x", OwnerID: owner, Name: "n.txt", Format: "text"}
	j, err := s.CreateDocument(d, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return d, j
}

func TestRetryWaitsForNotBefore(t *testing.T) {
	s, _ := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	_, j := newDoc(t, s, "prj_x", "x")
	if _, _, err := s.ClaimJob(); err != nil {
		t.Fatal(err)
	}
	if err := s.RetryJob(j.ID, now.Add(time.Minute), "ollama is down"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimJob(); !errors.Is(err, ErrNoJob) {
		t.Fatalf("claim before due: %v", err)
	}
	if due, ok := s.NextDue(); !ok || !due.Equal(now.Add(time.Minute)) {
		t.Fatalf("NextDue = %v, %v", due, ok)
	}
	now = now.Add(time.Minute)
	got, _, err := s.ClaimJob()
	if err != nil || got.Attempts != 2 {
		t.Fatalf("claim when due = %+v, %v", got, err)
	}
}

func TestSweepFilesRemovesOrphans(t *testing.T) {
	s, dir := openTest(t)
	d, _ := newDoc(t, s, "prj_x", "kept")
	orphan := filepath.Join(dir, "files", "prj_x", "deadbeef")
	if err := os.WriteFile(orphan, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepFiles(); n != 1 || err != nil {
		t.Fatalf("SweepFiles = %d, %v", n, err)
	}
	if _, err := s.ReadFile("prj_x", d.FileHash); err != nil {
		t.Fatalf("referenced file swept: %v", err)
	}
}

func TestSessionsAndCustomers(t *testing.T) {
	s, _ := openTest(t)
	p, _, _ := s.CreateProject("p")
	c, err := s.CreateCustomer(p.ID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCustomer("prj_missing", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("customer of missing project: %v", err)
	}
	cs, _ := s.Customers(p.ID)
	if len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("Customers = %v", cs)
	}
	sess, token, err := s.CreateSession(Session{ProjectID: p.ID, OwnerID: c.ID, Services: []string{"all"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.SessionByToken(token)
	if err != nil || got.ID != sess.ID || got.Expired(s.Now()) {
		t.Fatalf("SessionByToken = %+v, %v", got, err)
	}
	if !got.Expired(s.Now().Add(time.Hour)) {
		t.Fatal("session not expired after its ttl")
	}
	if _, err := s.SessionByToken(token[1:]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestDocumentOfChunk(t *testing.T) {
	id := ChunkID("doc_abc", 12)
	if d, ok := DocumentOfChunk(id); !ok || d != "doc_abc" {
		t.Fatalf("DocumentOfChunk(%s) = %s, %v", id, d, ok)
	}
	for _, bad := range []string{"doc_abc", "chk_", "chk_-1", ""} {
		if _, ok := DocumentOfChunk(bad); ok {
			t.Errorf("DocumentOfChunk(%q) ok", bad)
		}
	}
}

// The records' behaviour is the conformance suite's (storetest.RunSubpages);
// this is the bbolt store's own part: a PDF is a file, kept only while its
// record is.
func TestSubpageFilesFollowRecords(t *testing.T) {
	s, dir := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	sp, err := s.CreateSubpage(Subpage{ID: NewSubpageID(), ChunkID: "chk_a-0001", Varience: 1}, []byte("%PDF-a"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateSubpage(Subpage{ID: NewSubpageID(), ChunkID: "chk_a-0001", Varience: 1}, []byte("%PDF-b"), time.Hour)
	if err != nil || again.ID != sp.ID {
		t.Fatalf("second create = %+v, %v; want the first %s", again, err, sp.ID)
	}
	if files, _ := os.ReadDir(filepath.Join(dir, "subpages")); len(files) != 1 {
		t.Fatalf("%d subpage files, want 1 (the duplicate's dropped)", len(files))
	}
	now = now.Add(time.Hour)
	if n, err := s.SweepSubpages(); n != 1 || err != nil {
		t.Fatalf("SweepSubpages = %d, %v", n, err)
	}
	if files, _ := os.ReadDir(filepath.Join(dir, "subpages")); len(files) != 0 {
		t.Fatalf("files survived the sweep: %v", files)
	}
}

func TestQueueOrdersByDueTime(t *testing.T) {
	s, _ := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	_, a := newDoc(t, s, "prj_x", "a")
	if _, _, err := s.ClaimJob(); err != nil {
		t.Fatal(err)
	}
	// a waits out a back-off; b, queued later, is due first.
	if err := s.RetryJob(a.ID, now.Add(time.Minute), "down"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	_, b := newDoc(t, s, "prj_x", "b")
	if got, _, err := s.ClaimJob(); err != nil || got.ID != b.ID {
		t.Fatalf("claimed %+v, %v; want the due job %s", got, err, b.ID)
	}
	if _, _, err := s.ClaimJob(); !errors.Is(err, ErrNoJob) {
		t.Fatalf("claimed a job not yet due: %v", err)
	}
	now = now.Add(time.Minute)
	if got, _, err := s.ClaimJob(); err != nil || got.ID != a.ID {
		t.Fatalf("claimed %+v, %v; want %s once due", got, err, a.ID)
	}
}

func TestRetryOfAQueuedJobMovesIt(t *testing.T) {
	s, _ := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	_, j := newDoc(t, s, "prj_x", "a")
	if err := s.RetryJob(j.ID, now.Add(time.Hour), "later"); err != nil {
		t.Fatal(err)
	}
	if err := s.RetryJob(j.ID, now, "now after all"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimJob(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if got, _, err := s.ClaimJob(); !errors.Is(err, ErrNoJob) {
		t.Fatalf("the job was queued twice: claimed %+v again", got)
	}
}
