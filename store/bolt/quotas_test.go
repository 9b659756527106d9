package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// The counters' behaviour is the conformance suite's (storetest.RunQuotas);
// these are the bbolt store's own parts: originals as files, which no
// refused or failed upload may leave behind, the sweep of those a crash
// leaves while uploads go on, and the upgrade of older data.

// bigText is an original too large to be kept in the records: a file.
func bigText(tag string) []byte {
	return []byte(tag + strings.Repeat(" the heliotrope valve is greased every ninety days", 2000))
}

// originalFiles lists the files under DATA/files, as owner/name.
func originalFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	owners, _ := os.ReadDir(filepath.Join(dir, "files"))
	for _, o := range owners {
		files, err := os.ReadDir(filepath.Join(dir, "files", o.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			names = append(names, o.Name()+"/"+f.Name())
		}
	}
	slices.Sort(names)
	return names
}

// A transaction that fails after an upload's file was written leaves no
// file, unless another document refers to it: here, a session id too
// long for the index of documents by session fails the transaction once
// the file is in place.
func TestFailedUploadLeavesNoFile(t *testing.T) {
	s, dir := openTest(t)
	failing := func(content []byte) error {
		d := &store.Document{ProjectID: "prj_x", OwnerID: "cus_a", Name: "n", Format: "text",
			Metadata: map[string]string{store.SessionMetaKey: strings.Repeat("s", 40_000)}}
		_, err := s.CreateDocument(d, store.Bytes(content), store.ProjectLimits{})
		return err
	}
	if err := failing(bigText("new")); err == nil {
		t.Fatal("the upload with an oversized session id went in")
	}
	if got := originalFiles(t, dir); len(got) != 0 {
		t.Fatalf("files after a failed upload: %v; want none", got)
	}
	kept := &store.Document{ProjectID: "prj_x", OwnerID: "cus_a", Name: "n", Format: "text"}
	if _, err := s.CreateDocument(kept, store.Bytes(bigText("shared")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	if err := failing(bigText("shared")); err == nil {
		t.Fatal("the upload with an oversized session id went in")
	}
	if got := originalFiles(t, dir); len(got) != 1 {
		t.Fatalf("files after a failed upload of a stored content: %v; want the one stored", got)
	}
	if data, err := s.ReadOriginal(kept); err != nil || string(data) != string(bigText("shared")) {
		t.Fatalf("the document of the shared content lost its file: %d bytes, %v", len(data), err)
	}
}

// Uploads over a quota, refused before or in their transaction, leave no
// file either: a tenant at its quota who sends large files again and
// again fills no disk.
func TestRefusedUploadsLeaveNoFile(t *testing.T) {
	s, dir := openTest(t)
	limits := store.ProjectLimits{Documents: 3}
	const tries = 12
	errs := make([]error, tries)
	docs := make([]*store.Document, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			docs[i] = &store.Document{ProjectID: "prj_x", OwnerID: "cus_a", Name: "n", Format: "text"}
			_, errs[i] = s.CreateDocument(docs[i], store.Bytes(bigText(fmt.Sprint(i))), limits)
		}()
	}
	wg.Wait()
	var in []string
	for i, err := range errs {
		switch {
		case err == nil:
			in = append(in, "cus_a/"+docs[i].FileHash)
		case !errors.Is(err, store.ErrDocumentQuota):
			t.Fatalf("upload %d: %v", i, err)
		}
	}
	slices.Sort(in)
	if got := originalFiles(t, dir); len(in) != 3 || !slices.Equal(got, in) {
		t.Fatalf("files after %d uploads with room for 3: %v; want those of the %d that got in, %v", tries, got, len(in), in)
	}
	if d, err := s.CreateDocument(&store.Document{ProjectID: "prj_x", OwnerID: "cus_a", Name: "n", Format: "text"},
		store.Bytes(bigText("late")), limits); !errors.Is(err, store.ErrDocumentQuota) {
		t.Fatalf("an upload at the quota = %+v, %v; want ErrDocumentQuota", d, err)
	}
	if got := originalFiles(t, dir); !slices.Equal(got, in) {
		t.Fatalf("files after an upload refused at the quota: %v; want %v", got, in)
	}
}

// SweepFiles runs while uploads of files go on, as it does periodically
// in a running server: it takes the files left without a reference, and
// never one an upload is about to refer to.
func TestSweepFilesBesideUploads(t *testing.T) {
	s, dir := openTest(t)
	const uploaders, each = 4, 15
	stop := make(chan struct{})
	swept := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				swept <- n
				return
			default:
			}
			// Left by a crash, or a removal that failed, meanwhile.
			orphan := filepath.Join(dir, "files", "cus_0", fmt.Sprintf("%064x", n))
			os.MkdirAll(filepath.Dir(orphan), 0o700)
			if err := os.WriteFile(orphan, []byte("orphan"), 0o600); err != nil {
				t.Error(err)
			}
			if _, err := s.SweepFiles(); err != nil {
				t.Error(err)
			}
			if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an orphan survived the sweep: %v", err)
			}
			n++
		}
	}()
	var docs []*store.Document
	var mu sync.Mutex
	var wg sync.WaitGroup
	for u := range uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Every other upload repeats a content: it finds the
				// file there and refers to it without writing it.
				d := &store.Document{ProjectID: "prj_x", OwnerID: fmt.Sprint("cus_", u%2), Name: "n", Format: "text"}
				if _, err := s.CreateDocument(d, store.Bytes(bigText(fmt.Sprint(u, i/2))), store.ProjectLimits{}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				docs = append(docs, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	if n := <-swept; n == 0 {
		t.Fatal("no sweep ran beside the uploads")
	}
	for _, d := range docs {
		if _, err := s.ReadOriginal(d); err != nil {
			t.Fatalf("document %s lost its original to a sweep: %v", d.ID, err)
		}
	}
}

// Data of schema 9, from before what projects keep was counted, gets its
// counters and its sessions' index on open: the quotas then count what
// was there, and the sweep finds the sessions that ended before.
func TestProjectUsageCountedOnUpgrade(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	p, _, _ := s.CreateProject("acme")
	other, _, _ := s.CreateProject("other")
	for i := range 3 {
		if _, err := s.CreateCustomer(p.ID, fmt.Sprint(i), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	var bytes int64
	for i, content := range [][]byte{[]byte("short"), bigText("a"), bigText("a")} {
		d := &store.Document{ProjectID: p.ID, OwnerID: fmt.Sprint("cus_", i), Name: "n", Format: "text"}
		if _, err := s.CreateDocument(d, store.Bytes(content), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		bytes += d.Size
	}
	if _, err := s.CreateDocument(&store.Document{ProjectID: other.ID, OwnerID: other.ID, Name: "n", Format: "text"},
		store.Bytes([]byte("another project's")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	in := store.Session{ProjectID: p.ID, OwnerID: p.ID}
	ended, endedToken, _ := s.CreateSession(in, time.Minute, store.ProjectLimits{})
	_, aliveToken, _ := s.CreateSession(in, 3*time.Hour, store.ProjectLimits{})
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketProjectUsage, bucketProjectSessions} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, u64(9))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.UpgradedFrom() != 9 {
		t.Fatalf("UpgradedFrom = %d, want 9", s.UpgradedFrom())
	}
	s.SetClock(func() time.Time { return now })
	u, err := s.ProjectUsage(p.ID)
	if err != nil || u.Customers != 3 || u.Documents != 3 || u.StoredBytes != bytes || u.Sessions != 2 || !u.NextSessionExpiry.Equal(ended.ExpiresAt) {
		t.Fatalf("usage after the upgrade = %+v, %v; want 3 customers, 3 documents of %d bytes, 2 sessions", u, err, bytes)
	}
	if u, _ := s.ProjectUsage(other.ID); u.Documents != 1 || u.Customers != 0 {
		t.Fatalf("the other project's usage after the upgrade = %+v", u)
	}
	if _, err := s.CreateCustomer(p.ID, "one too many", store.ProjectLimits{Customers: 3}); !errors.Is(err, store.ErrCustomerQuota) {
		t.Fatalf("a customer over the quota of what was there: %v, want ErrCustomerQuota", err)
	}
	if _, _, err := s.CreateSession(in, time.Hour, store.ProjectLimits{Sessions: 2}); !errors.Is(err, store.ErrSessionQuota) {
		t.Fatalf("a session over the quota of what was there: %v, want ErrSessionQuota", err)
	}
	now = ended.ExpiresAt.Add(store.EndedSessionKept)
	if n, err := s.SweepSessions(); n != 1 || err != nil {
		t.Fatalf("SweepSessions after the upgrade = %d, %v; want the one ended", n, err)
	}
	if _, err := s.SessionByToken(endedToken); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the ended session after the sweep: %v", err)
	}
	if _, err := s.SessionByToken(aliveToken); err != nil {
		t.Fatalf("the session alive after the sweep: %v", err)
	}
}
