package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// The store's records behave as the conformance suite (store/storetest)
// says, on bbolt and PostgreSQL alike; the tests here are about what only
// the bbolt store has: its file lock and its files on disk.

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

// bbolt-only: one process holds a data dir's file; PostgreSQL serves many.
func TestOpenTwiceIsLocked(t *testing.T) {
	_, dir := openTest(t)
	if _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
}

func newDoc(t *testing.T, s *Store, owner, text string) (*store.Document, *store.Job) {
	t.Helper()
	d := &store.Document{ProjectID: "prj_x", OwnerID: owner, Name: "n.txt", Format: "text"}
	j, err := s.CreateDocument(d, store.Bytes([]byte(text)), store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return d, j
}

// bbolt-only: originals are files in the data dir, swept by SweepFiles.
func TestSweepFilesRemovesOrphans(t *testing.T) {
	s, dir := openTest(t)
	d, _ := newDoc(t, s, "prj_x", "kept")
	orphan := filepath.Join(dir, "files", "prj_x", "deadbeef")
	os.MkdirAll(filepath.Dir(orphan), 0o700) // a small original is no file
	if err := os.WriteFile(orphan, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepFiles(); n != 1 || err != nil {
		t.Fatalf("SweepFiles = %d, %v", n, err)
	}
	if _, err := s.ReadOriginal(d); err != nil {
		t.Fatalf("referenced file swept: %v", err)
	}
}

// The records' behaviour is the conformance suite's (storetest.RunSubpages);
// this is the bbolt store's own part: a PDF is a file, kept only while its
// record is, and the sweep also takes the files a crash left without one.
func TestSubpageFilesFollowRecords(t *testing.T) {
	s, dir := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	d := &store.Document{ProjectID: "prj_a", OwnerID: "cus_a", Name: "a.pdf", Format: "pdf"}
	if _, err := s.CreateDocument(d, store.Bytes([]byte("%PDF-")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	subpageDir := filepath.Join(dir, "subpages")
	files := func() map[string]bool {
		entries, _ := os.ReadDir(subpageDir)
		names := map[string]bool{}
		for _, e := range entries {
			names[e.Name()] = true
		}
		return names
	}
	slice := func(first int, ttl time.Duration) *store.Subpage {
		t.Helper()
		sp, err := s.CreateSubpage(store.Subpage{ID: store.NewSubpageID(), ProjectID: "prj_a", OwnerID: "cus_a", DocumentID: d.ID, FirstPage: first, LastPage: first}, []byte("%PDF-a"), ttl, store.SubpageLimits{})
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	sp := slice(1, time.Hour)
	if again := slice(1, time.Hour); again.ID != sp.ID {
		t.Fatalf("second create = %s; want the first %s", again.ID, sp.ID)
	}
	live := slice(2, 3*time.Hour)
	if got := files(); len(got) != 2 {
		t.Fatalf("subpage files %v, want 2 (the duplicate's dropped)", got)
	}
	// What a crash leaves: a finished file whose record was never
	// committed, and a temporary file cut short.
	orphan := store.NewSubpageID() + ".pdf"
	for _, name := range []string{orphan, ".tmp-123456"} {
		if err := os.WriteFile(filepath.Join(subpageDir, name), []byte("%PDF-orphan"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Hour)
	if n, err := s.SweepSubpages(); n != 3 || err != nil {
		t.Fatalf("SweepSubpages = %d, %v; want the expired subpage and the 2 orphans", n, err)
	}
	if got := files(); len(got) != 1 || !got[live.ID+".pdf"] {
		t.Fatalf("after the sweep, subpage files %v; want the live one's alone", got)
	}
	if f, err := s.OpenSubpage(live.ID); err != nil {
		t.Fatalf("the live subpage's file: %v", err)
	} else {
		f.Close()
	}
}

// Data of schema 6 found subpages by chunk and varience; upgraded, each is
// found by its document's pages, counts toward its owner's budget, and
// goes with its document. One whose chunk is gone goes, and its file with
// the next sweep.
func TestSubpagesUpgradedFromSchema6(t *testing.T) {
	s, dir := openTest(t)
	d := &store.Document{ProjectID: "prj_a", OwnerID: "cus_a", Name: "a.pdf", Format: "pdf"}
	if _, err := s.CreateDocument(d, store.Bytes([]byte("%PDF-")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	chunks := []store.Chunk{{Position: 0, Page: 3, Text: "a"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1}}); err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(time.Hour).UTC()
	kept, gone := store.NewSubpageID(), store.NewSubpageID()
	if err := os.MkdirAll(filepath.Join(dir, "subpages"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSubpages)
		for id, chunk := range map[string]string{kept: chunks[0].ID, gone: "chk_gone-0001"} {
			rec := fmt.Sprintf(`{"subpage_id":%q,"project_id":"prj_a","owner_id":"cus_a","chunk_id":%q,"varience":1,"first_page":2,"last_page":4,"file_name":"a-pages-2-4.pdf","created_at":"2026-01-01T00:00:00Z","expires_at":%q}`,
				id, chunk, expires.Format(time.RFC3339Nano))
			if err := b.Put([]byte(id), []byte(rec)); err != nil {
				return err
			}
			if err := b.Put([]byte("by-chunk/"+chunk+"/1"), []byte(id)); err != nil {
				return err
			}
			if err := os.WriteFile(s.subpagePath(id), []byte("%PDF-v6"), 0o600); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, u64(6))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.UpgradedFrom() != 6 {
		t.Fatalf("UpgradedFrom = %d, want 6", s.UpgradedFrom())
	}
	sp, err := s.SubpageFor(d.ID, 2, 4)
	if err != nil || sp.ID != kept || sp.DocumentID != d.ID || sp.Size != int64(len("%PDF-v6")) {
		t.Fatalf("SubpageFor(pages 2-4) = %+v, %v; want %s of %s", sp, err, kept, d.ID)
	}
	if u, err := s.SubpageUsage("prj_a", "cus_a"); err != nil || u.ProjectSubpages != 1 || u.OwnerBytes != sp.Size {
		t.Fatalf("usage = %+v, %v; want the one subpage", u, err)
	}
	if _, err := s.Subpage(gone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the subpage of a chunk gone: err = %v, want ErrNotFound", err)
	}
	if n, err := s.SweepSubpages(); n != 1 || err != nil {
		t.Fatalf("SweepSubpages = %d, %v; want the file of the subpage gone", n, err)
	}
	if _, err := s.DeleteDocument(d.ID); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "subpages")); len(entries) != 0 {
		t.Fatalf("subpage files after the document's delete: %v", entries)
	}
}
