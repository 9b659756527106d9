package server_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/docsift/docsift/store"
)

// tinyDisk mounts a small tmpfs for the test: a real full disk, so the
// whole path (file write, bbolt, HTTP) meets a real ENOSPC.
func tinyDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestFullDiskLosesNothingAndSaysSo(t *testing.T) {
	dir := tinyDisk(t, "3m")
	e := newEnv(t, withDataDir(dir), withMaxFileBytes(4<<20))
	owner := e.a.projectID
	first := e.uploadText(t, e.a.key, owner, "kept.txt", "The lighthouse keeper logs every passing ship.")

	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = 'a' + byte(i%26)
		if i%80 == 79 {
			big[i] = '\n'
		}
	}
	e.unchanged(t, func() {
		r := e.uploadFile(t, e.a.key, dataPart(map[string]string{"owner_id": owner}), filePart("big.txt", big))
		wantError(t, r, http.StatusInsufficientStorage, "out of disk space")
	})
	// What was there is intact and searchable.
	q := e.query(t, e.a.key, "/query/project", map[string]any{"project_id": owner, "query": "lighthouse keeper"})
	if len(q.Chunks) != 1 || q.Chunks[0].DocumentID != first {
		t.Fatalf("after the full disk: %+v", q)
	}
	// No half-written upload is left behind.
	entries, _ := os.ReadDir(filepath.Join(dir, "files", owner))
	for _, en := range entries {
		if info, _ := en.Info(); info.Size() > 1<<20 {
			t.Errorf("partial upload left on disk: %s (%d bytes)", en.Name(), info.Size())
		}
	}
	if j := e.waitJob(t, e.a.key, decodeAs[apiUpload](t, e.postJSON(t, "/upload/text", e.a.key, map[string]any{"owner_id": owner, "text": "Small texts still fit."})).JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("a small upload after the full disk: %+v", j)
	}
}
