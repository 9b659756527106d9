package indexes

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestIndexStaleSnapshotTempsRemoved leaves in the index dir what a kill -9
// during a save leaves: the temp file of the snapshot or segment being
// written. The next start removes it and keeps everything else.
func TestIndexStaleSnapshotTempsRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	keep := []string{"cus_a.idx", "cus_a.idx.seg1", "notes.tmp", "cus_b.idx.tmpx"}
	for _, name := range keep {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stale []string
	for _, file := range []string{"cus_a.idx", "cus_b.idx", "cus_a.idx.seg2"} {
		// As a save names its temp file.
		f, err := os.CreateTemp(dir, file+".tmp*")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		stale = append(stale, filepath.Base(f.Name()))
	}

	New(newMemSource(), dir, "m", func() int { return 2 }, Options{}, quietLog())

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	slices.Sort(keep)
	if !slices.Equal(left, keep) {
		t.Errorf("index dir holds %v after start, want %v (stale: %v)", left, keep, stale)
	}
}
