package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
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

func newDoc(t *testing.T, s *Store, owner, text string) (*Document, *Job) {
	t.Helper()
	d := &Document{ProjectID: "prj_x", OwnerID: owner, Name: "n.txt", Format: "text"}
	j, err := s.CreateDocument(d, Bytes([]byte(text)))
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
// record is.
func TestSubpageFilesFollowRecords(t *testing.T) {
	s, dir := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	d := &Document{ProjectID: "prj_a", OwnerID: "cus_a", Name: "a.pdf", Format: "pdf"}
	if _, err := s.CreateDocument(d, Bytes([]byte("%PDF-"))); err != nil {
		t.Fatal(err)
	}
	chunks := []Chunk{{Position: 0, Page: 1, Text: "a"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1}}); err != nil {
		t.Fatal(err)
	}
	sp, err := s.CreateSubpage(Subpage{ID: NewSubpageID(), ChunkID: chunks[0].ID, Varience: 1}, []byte("%PDF-a"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateSubpage(Subpage{ID: NewSubpageID(), ChunkID: chunks[0].ID, Varience: 1}, []byte("%PDF-b"), time.Hour)
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
