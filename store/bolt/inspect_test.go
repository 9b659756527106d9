package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// A database file with a damaged page is reported as damaged by Inspect
// (what doctor and backup read), not a panic of bbolt's.
func TestInspectReportsDamage(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		d := &store.Document{ProjectID: "prj_p", OwnerID: "prj_p", Name: fmt.Sprintf("note-%d.txt", i), Format: "text"}
		if _, err := s.CreateDocument(d, store.Bytes([]byte(fmt.Sprintf("Note %d about the harbour and its tides.", i))), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Inspect(); err != nil {
		t.Fatalf("a sound store: %v", err)
	}
	var root uint64
	if err := s.db.View(func(tx *bbolt.Tx) error {
		root = uint64(tx.Bucket(bucketDocuments).Root())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if root == 0 {
		t.Fatal("the documents bucket is inline: add more documents")
	}

	// Overwrite the flags of the documents bucket's root page.
	f, err := os.OpenFile(filepath.Join(dir, DBFileName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xde, 0xad}, int64(root)*int64(os.Getpagesize())+8); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s, err = Open(dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	if _, err := s.Inspect(); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Inspect of a damaged file: %v, want ErrDamaged", err)
	}
}
