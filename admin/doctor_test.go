package admin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/ingest"
)

func findingsOf(fs []admin.Finding, check string) []admin.Finding {
	var out []admin.Finding
	for _, f := range fs {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

func worst(fs []admin.Finding) string {
	w := admin.StatusOK
	for _, f := range fs {
		if f.Status == admin.StatusFail || (f.Status == admin.StatusWarn && w == admin.StatusOK) {
			w = f.Status
		}
	}
	return w
}

func TestDoctorFindsWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	const owner = "prj_doc"
	for i := range 3 {
		n.wait(t, n.upload(t, owner, i))
	}
	// One original large enough to be a file (small ones are kept in the
	// database), for the doctor to miss below.
	big, _, err := n.engine.Submit(ingest.Upload{ProjectID: owner, OwnerID: owner, Name: "big.txt", Data: []byte(strings.Repeat("The harbour of the big town. ", 3000))})
	if err != nil {
		t.Fatal(err)
	}
	n.wait(t, big.ID)
	if err := n.engine.Shutdown(context.Background()); err != nil { // writes the snapshot
		t.Fatal(err)
	}
	healthy := admin.Doctor(n.store, dir, false)
	for _, f := range healthy {
		if f.Status != admin.StatusOK {
			t.Errorf("healthy data dir: %+v", f)
		}
	}

	// Through the socket, the same report.
	c, err := admin.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	viaSocket, err := c.Doctor()
	if err != nil || len(viaSocket) != len(healthy) {
		t.Errorf("doctor through the socket: %d findings (%v), %d directly", len(viaSocket), err, len(healthy))
	}

	docs, _, _ := n.store.Documents(owner, "", 1000)
	original := filepath.Join(dir, "files", owner, docs[0].FileHash)
	if err := os.Remove(original); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "files", owner, "stray"), []byte("x"), 0o600)
	snapshot := filepath.Join(dir, "index", owner+".idx")
	b, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	os.WriteFile(snapshot, b, 0o600)
	os.WriteFile(filepath.Join(dir, "index", "prj_gone.idx"), []byte("old"), 0o600)

	sick := admin.Doctor(n.store, dir, false)
	if f := findingsOf(sick, "files"); worst(f) != admin.StatusFail || !strings.Contains(f[0].Detail, docs[0].FileHash) || f[0].Fix == "" {
		t.Errorf("a missing original: %+v", f)
	}
	idx := findingsOf(sick, "index")
	var corrupt, orphan bool
	for _, f := range idx {
		corrupt = corrupt || (strings.Contains(f.Detail, owner+".idx") && f.Status == admin.StatusWarn)
		orphan = orphan || (strings.Contains(f.Detail, "prj_gone.idx") && strings.Contains(f.Fix, "delete"))
	}
	if !corrupt || !orphan {
		t.Errorf("a corrupt snapshot and one of an owner with no chunks: %+v", idx)
	}
	if f := findingsOf(sick, "store"); worst(f) != admin.StatusOK {
		t.Errorf("store: %+v", f)
	}
	if d := findingsOf(sick, "disk"); len(d) != 1 || !strings.Contains(d[0].Detail, "free of") {
		t.Errorf("disk: %+v", d)
	}

	// With the original back, only the stray file is left, as a warning.
	os.Remove(filepath.Join(dir, "files", owner, "stray"))
	data, _ := n.store.ReadOriginal(&docs[1]) // any content; only presence is checked
	os.WriteFile(original, data, 0o600)
	if f := findingsOf(admin.Doctor(n.store, dir, false), "files"); worst(f) != admin.StatusOK {
		t.Errorf("files after repair: %+v", f)
	}
}
