package store

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// newExternal creates a document of owner under external id ext.
func newExternal(t *testing.T, s *Store, owner, ext, text string) (*Document, *Job) {
	t.Helper()
	d := &Document{ProjectID: "prj_x", OwnerID: owner, Name: "n.txt", Format: "text", ExternalID: ext}
	j, err := s.CreateDocument(d, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return d, j
}

// succeed writes one chunk for d, as its job's commit does, and returns
// the sequences it replaced.
func succeed(t *testing.T, s *Store, d *Document) ([]uint64, error) {
	t.Helper()
	return s.ReplaceChunks(d.ID, "m", []Chunk{{Position: 0, Text: "text of " + d.ID}}, [][]float32{{1, 0}})
}

func holderOf(t *testing.T, s *Store, owner, ext string) string {
	t.Helper()
	d, err := s.DocumentByExternalID(owner, ext)
	if errors.Is(err, ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

func TestExternalIDReplacement(t *testing.T) {
	s, _ := openTest(t)
	v1, _ := newExternal(t, s, "cus_a", "manual", "version one")
	if got := holderOf(t, s, "cus_a", "manual"); got != v1.ID {
		t.Fatalf("a new external id is held by %q, want the first upload %s", got, v1.ID)
	}
	if _, err := succeed(t, s, v1); err != nil {
		t.Fatal(err)
	}
	v1Seqs, _ := s.OwnerSeqs("cus_a")

	// A second upload waits as a candidate: the first stays the holder.
	v2, _ := newExternal(t, s, "cus_a", "manual", "version two")
	if got := holderOf(t, s, "cus_a", "manual"); got != v1.ID {
		t.Fatalf("while the replacement runs the holder is %q, want %s", got, v1.ID)
	}
	removed, err := succeed(t, s, v2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, v1Seqs) {
		t.Errorf("the replacement returned %v as removed, want the old version's %v", removed, v1Seqs)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != v2.ID {
		t.Fatalf("after the replacement the holder is %q, want %s", got, v2.ID)
	}
	if _, err := s.Document(v1.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the replaced document is still there: %v", err)
	}
	if _, err := os.Stat(s.filePath("cus_a", v1.FileHash)); !os.IsNotExist(err) {
		t.Errorf("the replaced document's file is still on disk: %v", err)
	}
	seqs, _ := s.OwnerSeqs("cus_a")
	if len(seqs) != 1 || slices.Contains(v1Seqs, seqs[0]) {
		t.Errorf("owner chunks %v, want only the new version's", seqs)
	}

	// Another owner's external id of the same name is another id.
	other, _ := newExternal(t, s, "cus_b", "manual", "version two")
	if got := holderOf(t, s, "cus_b", "manual"); got != other.ID {
		t.Errorf("cus_b's external id is held by %q, want %s", got, other.ID)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != v2.ID {
		t.Errorf("cus_b's upload changed cus_a's holder to %q", got)
	}
}

// TestExternalIDLaterUploadWins: two replacements race; whichever job ends
// first, the upload created later holds the external id, and the earlier
// one, ending after it, is refused without changing anything.
func TestExternalIDLaterUploadWins(t *testing.T) {
	s, _ := openTest(t)
	holder, _ := newExternal(t, s, "cus_a", "manual", "v1")
	if _, err := succeed(t, s, holder); err != nil {
		t.Fatal(err)
	}
	older, _ := newExternal(t, s, "cus_a", "manual", "v2")
	newer, _ := newExternal(t, s, "cus_a", "manual", "v3")
	if _, err := succeed(t, s, newer); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Fingerprint()
	if _, err := succeed(t, s, older); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("the older upload finishing last: %v, want ErrSuperseded", err)
	}
	if after, _ := s.Fingerprint(); after != before {
		t.Error("a superseded replacement changed the store")
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != newer.ID {
		t.Errorf("holder %q, want the newer upload %s", got, newer.ID)
	}
}

// TestExternalIDReplacesPendingHolder: a newer upload that succeeds while
// the holder has not run ends the holder's job with a reason.
func TestExternalIDReplacesPendingHolder(t *testing.T) {
	s, _ := openTest(t)
	first, firstJob := newExternal(t, s, "cus_a", "manual", "v1")
	second, _ := newExternal(t, s, "cus_a", "manual", "v2")
	if _, err := succeed(t, s, second); err != nil {
		t.Fatal(err)
	}
	j, err := s.Job(firstJob.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != StatusFailed || j.Error == "" {
		t.Errorf("the replaced upload's job is %s %q, want FAILED with a reason", j.Status, j.Error)
	}
	if _, err := s.Document(first.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the replaced pending document is still there: %v", err)
	}
	// Its queue entry is gone: the only job left to claim is the
	// replacement's own (its commit above ran ahead of its job here).
	if job, _, err := s.ClaimJob(); err != nil || job.DocumentID != second.ID {
		t.Errorf("claimed %+v, %v; want the replacement's job", job, err)
	}
	if job, _, err := s.ClaimJob(); !errors.Is(err, ErrNoJob) {
		t.Errorf("claimed %+v after its document was replaced", job)
	}
}

// TestExternalIDFreedByDelete: deleting the holder frees the external id
// for the next upload; deleting a candidate leaves the holder.
func TestExternalIDFreedByDelete(t *testing.T) {
	s, _ := openTest(t)
	holder, _ := newExternal(t, s, "cus_a", "manual", "v1")
	candidate, _ := newExternal(t, s, "cus_a", "manual", "v2")
	if _, err := s.DeleteDocument(candidate.ID); err != nil {
		t.Fatal(err)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != holder.ID {
		t.Fatalf("deleting a candidate changed the holder to %q", got)
	}
	if _, err := s.DeleteDocument(holder.ID); err != nil {
		t.Fatal(err)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != "" {
		t.Fatalf("the deleted holder's external id is held by %q", got)
	}
	next, _ := newExternal(t, s, "cus_a", "manual", "v3")
	if got := holderOf(t, s, "cus_a", "manual"); got != next.ID {
		t.Fatalf("the freed external id went to %q, want the next upload %s", got, next.ID)
	}
}
