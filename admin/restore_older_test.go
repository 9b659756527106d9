package admin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/docsift/docsift/store/bolt"
	"go.etcd.io/bbolt"
)

// A backup of data an older docsift wrote is checked on a copy: restoring
// it is how one goes back to that version, so it must not be upgraded.
func TestRestoreCheckLeavesOlderDataAlone(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateProject("older"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := bbolt.Open(filepath.Join(dir, bolt.DBFileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte{0, 0, 0, 0, 0, 0, 0, 5})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if err := checkRestored(dir); err != nil {
		t.Fatalf("check of older data: %v", err)
	}
	if st, err := bolt.OpenAsIs(dir); !errors.Is(err, bolt.ErrOlderData) {
		if st != nil {
			st.Close()
		}
		t.Fatalf("after the check, the data opens as %v, want still older", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != bolt.DBFileName && e.Name() != "files" {
			t.Errorf("the check left %s", e.Name())
		}
	}
}
