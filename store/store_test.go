package store

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
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

func TestJobLifecycleAndRerunDoesNotDuplicate(t *testing.T) {
	s, _ := openTest(t)
	d, j := newDoc(t, s, "prj_x", "hello world")
	if j.Status != StatusPending {
		t.Fatalf("new job status %s", j.Status)
	}
	claimed, doc, err := s.ClaimJob()
	if err != nil || claimed.ID != j.ID || doc.ID != d.ID || claimed.Status != StatusProcessing {
		t.Fatalf("ClaimJob = %+v, %+v, %v", claimed, doc, err)
	}
	if _, _, err := s.ClaimJob(); !errors.Is(err, ErrNoJob) {
		t.Fatalf("second claim: %v, want ErrNoJob", err)
	}
	chunks := []Chunk{{Position: 0, Text: "hello"}, {Position: 1, Text: "world"}}
	vecs := [][]float32{{1, 0}, {0, 1}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, vecs); err != nil {
		t.Fatal(err)
	}
	// The process dies here; on restart the job runs again.
	if n, err := s.RequeueInterrupted(); n != 1 || err != nil {
		t.Fatalf("RequeueInterrupted = %d, %v", n, err)
	}
	if _, _, err := s.ClaimJob(); err != nil {
		t.Fatal(err)
	}
	again := []Chunk{{Position: 0, Text: "hello"}, {Position: 1, Text: "world"}}
	removed, err := s.ReplaceChunks(d.ID, "m", again, vecs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(removed, []uint64{chunks[0].Seq, chunks[1].Seq}) {
		t.Fatalf("removed %v, want the first run's %d,%d", removed, chunks[0].Seq, chunks[1].Seq)
	}
	seqs, _ := s.OwnerSeqs("prj_x")
	if !reflect.DeepEqual(seqs, []uint64{again[0].Seq, again[1].Seq}) {
		t.Fatalf("owner seqs %v, want only the re-run's", seqs)
	}
	if again[0].ID != ChunkID(d.ID, 0) || again[0].ID != chunks[0].ID {
		t.Fatalf("chunk id not derived from document and position: %s", again[0].ID)
	}
	if err := s.FinishJob(j.ID, 2, 0, ""); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Job(j.ID)
	doc, _ = s.Document(d.ID)
	if got.Status != StatusSucceeded || got.Chunks != 2 || doc.Status != StatusSucceeded || doc.Chunks != 2 {
		t.Fatalf("after finish: job %+v doc %+v", got, doc)
	}
	v, err := s.Vector("m", again[1].Seq)
	if err != nil || !reflect.DeepEqual(v, []float32{0, 1}) {
		t.Fatalf("Vector = %v, %v", v, err)
	}
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

func TestDeleteDocumentRemovesEverything(t *testing.T) {
	s, dir := openTest(t)
	a, _ := newDoc(t, s, "cus_a", "same bytes")
	b, jb := newDoc(t, s, "cus_a", "same bytes")
	if a.FileHash != b.FileHash {
		t.Fatal("same content, different hash")
	}
	s.ClaimJob()
	chunks := []Chunk{{Position: 0, Text: "t"}}
	if _, err := s.ReplaceChunks(a.ID, "m", chunks, [][]float32{{1}}); err != nil {
		t.Fatal(err)
	}
	removed, err := s.DeleteDocument(a.ID)
	if err != nil || !reflect.DeepEqual(removed, []uint64{chunks[0].Seq}) {
		t.Fatalf("DeleteDocument = %v, %v", removed, err)
	}
	if _, err := s.Chunk(chunks[0].ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("chunk survived: %v", err)
	}
	if seqs, _ := s.OwnerSeqs("cus_a"); len(seqs) != 0 {
		t.Fatalf("owner seqs survived: %v", seqs)
	}
	// b still refers to the shared blob.
	if _, err := s.ReadFile("cus_a", b.FileHash); err != nil {
		t.Fatalf("shared file removed too early: %v", err)
	}
	if _, err := s.DeleteDocument(b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "cus_a", b.FileHash)); !os.IsNotExist(err) {
		t.Fatalf("file kept after last document deleted: %v", err)
	}
	j, _ := s.Job(jb.ID)
	if j.Status != StatusFailed {
		t.Fatalf("queued job of deleted document: %s", j.Status)
	}
	if _, _, err := s.ClaimJob(); !errors.Is(err, ErrNoJob) {
		t.Fatalf("deleted document's job still queued: %v", err)
	}
	if docs, _ := s.Documents("cus_a"); len(docs) != 0 {
		t.Fatalf("Documents = %v", docs)
	}
	if _, err := s.ReplaceChunks(a.ID, "m", chunks, [][]float32{{1}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReplaceChunks on deleted document: %v", err)
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

func TestOwnerModelAndReindex(t *testing.T) {
	s, _ := openTest(t)
	d, _ := newDoc(t, s, "cus_a", "x")
	chunks := []Chunk{{Position: 0, Text: "a"}, {Position: 1, Text: "b"}}
	if _, err := s.ReplaceChunks(d.ID, "old", chunks, [][]float32{{1, 0}, {0, 1}}); err != nil {
		t.Fatal(err)
	}
	if om, err := s.OwnerModel("cus_a"); err != nil || om.Model != "old" || om.Dim != 2 {
		t.Fatalf("OwnerModel = %+v, %v", om, err)
	}
	if _, err := s.ReplaceChunks(d.ID, "new", chunks, [][]float32{{1, 0, 0}, {0, 1, 0}}); !errors.Is(err, ErrModelMismatch) {
		t.Fatalf("vectors of another model: err = %v, want ErrModelMismatch", err)
	}
	if err := s.BeginReindex("cus_a", "new"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutVectors("new", []uint64{chunks[0].Seq}, [][]float32{{1, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishReindex("cus_a", "new", 3); err == nil {
		t.Fatal("switched with a chunk lacking a vector of the new model")
	}
	missing, _ := s.MissingVectors("cus_a", "new")
	if !reflect.DeepEqual(missing, []uint64{chunks[1].Seq}) {
		t.Fatalf("MissingVectors = %v", missing)
	}
	s.PutVectors("new", missing, [][]float32{{0, 1, 0}})
	if err := s.FinishReindex("cus_a", "new", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Vector("old", chunks[0].Seq); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old vectors kept after the switch: %v", err)
	}
	if v, _ := s.Vector("new", chunks[1].Seq); !reflect.DeepEqual(v, []float32{0, 1, 0}) {
		t.Fatalf("new vector = %v", v)
	}
	if om, _ := s.OwnerModel("cus_a"); om.Model != "new" || om.Next != "" {
		t.Fatalf("after switch: %+v", om)
	}
}

func TestSubpagesReuseAndSweep(t *testing.T) {
	s, dir := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	sp, err := s.CreateSubpage(Subpage{ID: NewSubpageID(), ChunkID: "chk_a-0001", Varience: 1}, []byte("%PDF-a"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A second cut of the same chunk and varience keeps the first.
	again, err := s.CreateSubpage(Subpage{ID: NewSubpageID(), ChunkID: "chk_a-0001", Varience: 1}, []byte("%PDF-b"), time.Hour)
	if err != nil || again.ID != sp.ID {
		t.Fatalf("second create = %+v, %v; want the first %s", again, err, sp.ID)
	}
	if got, err := s.SubpageFor("chk_a-0001", 1); err != nil || got.ID != sp.ID {
		t.Fatalf("SubpageFor = %+v, %v", got, err)
	}
	if data, _ := s.ReadSubpage(sp.ID); string(data) != "%PDF-a" {
		t.Fatalf("subpage bytes %q", data)
	}
	files, _ := os.ReadDir(filepath.Join(dir, "subpages"))
	if len(files) != 1 {
		t.Fatalf("%d subpage files, want 1 (the duplicate's dropped)", len(files))
	}
	if n, _ := s.SweepSubpages(); n != 0 {
		t.Fatalf("swept %d live subpages", n)
	}
	now = now.Add(time.Hour)
	if _, err := s.SubpageFor("chk_a-0001", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired subpage still reused: %v", err)
	}
	if n, err := s.SweepSubpages(); n != 1 || err != nil {
		t.Fatalf("SweepSubpages = %d, %v", n, err)
	}
	if _, err := s.Subpage(sp.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("record survived the sweep: %v", err)
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
