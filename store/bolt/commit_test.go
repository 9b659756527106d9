package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// Group commits (commit.go) and small originals kept in the database
// (files.go): what the bbolt store alone does to make ingest cheap.

func openGroupTest(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// txID is the id of the last committed write transaction: the count of
// commits so far.
func txID(t *testing.T, s *Store) int {
	t.Helper()
	var id int
	if err := s.db.View(func(tx *bbolt.Tx) error { id = int(tx.ID()); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// Many uploads, claims and finishes at once share commits, and every one
// acknowledged is in the file: a copy of the file taken right after the
// last call returned (what a kill -9 would leave on disk) holds every
// document, its original and its SUCCEEDED job.
func TestGroupCommitAcknowledgedIsInTheFile(t *testing.T) {
	s, dir := openGroupTest(t)
	const uploads, workers = 200, 16
	before := txID(t, s)
	var wg sync.WaitGroup
	jobs := make(chan string, uploads)
	for i := range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &store.Document{ProjectID: "prj_g", OwnerID: "prj_g", Name: fmt.Sprintf("d%d.txt", i), Format: "text"}
			j, err := s.CreateDocument(d, store.Bytes([]byte(fmt.Sprintf("text of document %d", i))), store.ProjectLimits{})
			if err != nil {
				t.Error(err)
				return
			}
			jobs <- j.ID
		}()
	}
	wg.Wait()
	close(jobs)
	if got := len(jobs); got != uploads {
		t.Fatalf("%d uploads acknowledged, want %d", got, uploads)
	}
	var finished sync.Map // job id → true once FinishJob returned
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, _, err := s.ClaimJob(nil)
				if errors.Is(err, store.ErrNoJob) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.FinishJob(j.ID, 1, 0, ""); err != nil {
					t.Error(err)
					return
				}
				finished.Store(j.ID, true)
			}
		}()
	}
	wg.Wait()
	// 200 uploads, 200 claims and 200 finishes: one commit each would be
	// 600; grouped, they take fewer than one a document.
	if commits := txID(t, s) - before; commits >= uploads {
		t.Errorf("%d commits for %d uploads, claims and finishes: not grouped", commits, 3*uploads)
	}

	crashed := filepath.Join(t.TempDir(), "crashed")
	if err := os.MkdirAll(crashed, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(dir, DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crashed, DBFileName), db, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Open(crashed)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	docs, _, err := c.Documents("prj_g", "", uploads+1)
	if err != nil || len(docs) != uploads {
		t.Fatalf("after the crash: %d documents (%v), want %d", len(docs), err, uploads)
	}
	n := 0
	for _, d := range docs {
		j, err := c.Job(d.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := finished.Load(j.ID); !ok {
			t.Fatalf("job %s was never finished", j.ID)
		}
		if j.Status != store.StatusSucceeded || d.Status != store.StatusSucceeded {
			t.Errorf("acknowledged SUCCEEDED, after the crash job %s is %s and its document %s", j.ID, j.Status, d.Status)
		}
		data, err := c.ReadOriginal(&d)
		if err != nil || !bytes.HasPrefix(data, []byte("text of document ")) {
			t.Errorf("original of %s after the crash: %q, %v", d.Name, data, err)
		}
		n++
	}
	if n != uploads {
		t.Errorf("%d documents checked", n)
	}
}

// holdCommits makes the next group commit wait until release is closed,
// with its caller leading: the calls made meanwhile queue, and commit
// together as the next group.
func holdCommits(t *testing.T, s *Store) (release chan struct{}, done chan error) {
	t.Helper()
	entered, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.update(func(*bbolt.Tx) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	return release, done
}

// waitQueued waits until n calls wait for the next group commit.
func waitQueued(s *Store, n int) {
	for {
		s.commits.mu.Lock()
		got := len(s.commits.waiting)
		s.commits.mu.Unlock()
		if got >= n {
			return
		}
		// The callers queue from other goroutines: yield to them.
		runtime.Gosched()
	}
}

// One function failing, or panicking, in a group fails only its own
// caller: the others are committed once each, and later commits go on.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s, _ := openGroupTest(t)
	bucket := []byte("grouptest")
	if err := s.db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	release, held := holdCommits(t, s)

	const calls = 12
	var runs [calls]atomic.Int32
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.update(func(tx *bbolt.Tx) error {
				runs[i].Add(1)
				b := tx.Bucket(bucket)
				// Each adds one to a shared counter: a run that was
				// rolled back and run again must count once.
				n := 0
				if v := b.Get([]byte("count")); v != nil {
					n = int(fromU64(v))
				}
				if err := b.Put([]byte("count"), u64(uint64(n+1))); err != nil {
					return err
				}
				if err := b.Put([]byte(fmt.Sprintf("call-%02d", i)), nil); err != nil {
					return err
				}
				switch i {
				case 4:
					return errors.New("refused")
				case 9:
					panic("a bug")
				}
				return nil
			})
		}()
	}
	waitQueued(s, calls)
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	for i, err := range errs {
		switch {
		case i == 4 && (err == nil || err.Error() != "refused"):
			t.Errorf("call 4: err = %v, want its own error", err)
		case i == 9 && (err == nil || !strings.Contains(err.Error(), "a bug")):
			t.Errorf("call 9: err = %v, want its panic as an error", err)
		case i != 4 && i != 9 && err != nil:
			t.Errorf("call %d: err = %v, failed with another call", i, err)
		}
	}
	rerun := 0
	for i := range calls {
		rerun += int(runs[i].Load()) - 1
	}
	if rerun == 0 {
		t.Errorf("no call ran twice: the group was not rolled back and run again")
	}
	var count uint64
	var written []string
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucket)
		count = fromU64(b.Get([]byte("count")))
		return b.ForEach(func(k, _ []byte) error {
			if bytes.HasPrefix(k, []byte("call-")) {
				written = append(written, string(k))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != calls-2 || len(written) != calls-2 || strings.Contains(strings.Join(written, ","), "call-04") || strings.Contains(strings.Join(written, ","), "call-09") {
		t.Errorf("count %d, written %v: want the %d calls that succeeded, once each", count, written, calls-2)
	}
	// The queue is not left waiting for a leader.
	if err := s.update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put([]byte("after"), nil) }); err != nil {
		t.Fatalf("a commit after the failures: %v", err)
	}
}

// A leader yields while callers keep joining the queue, and commits once
// a yield brought nobody, or after gatherYields.
func TestGroupCommitGathersWhileCallersCome(t *testing.T) {
	for _, tc := range []struct {
		arriving []int // calls that join during each yield
		yields   int
	}{
		{nil, 1},            // alone: one yield, which brings nobody
		{[]int{3}, 2},       // three came during the first
		{[]int{3, 1, 2}, 4}, // more and more, until nobody comes
		{[]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, gatherYields}, // a stream: bounded
	} {
		queued, yields := 1, 0
		gather(func() int { return queued }, func() {
			if yields < len(tc.arriving) {
				queued += tc.arriving[yields]
			}
			yields++
		})
		if yields != tc.yields {
			t.Errorf("callers arriving %v: %d yields, want %d", tc.arriving, yields, tc.yields)
		}
	}
}

// A claim that finds no job left (another claim of its group took it)
// fails none of the calls it is grouped with.
func TestGroupCommitEmptyClaimFailsNothing(t *testing.T) {
	s, _ := openGroupTest(t)
	if _, err := s.CreateDocument(&store.Document{ProjectID: "prj_g", OwnerID: "prj_g", Name: "a.txt", Format: "text"}, store.Bytes([]byte("a text")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	release, held := holdCommits(t, s)
	claims := make(chan error, 2)
	for range 2 {
		go func() { _, _, err := s.ClaimJob(nil); claims <- err }()
	}
	waitQueued(s, 2)
	created := make(chan error, 1)
	go func() {
		_, err := s.CreateDocument(&store.Document{ProjectID: "prj_g", OwnerID: "prj_g", Name: "b.txt", Format: "text"}, store.Bytes([]byte("b text")), store.ProjectLimits{})
		created <- err
	}()
	waitQueued(s, 3)
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	first, second := <-claims, <-claims
	if (first == nil) == (second == nil) || !errors.Is(errors.Join(first, second), store.ErrNoJob) {
		t.Errorf("two claims of one job: %v and %v, want one job and one ErrNoJob", first, second)
	}
	if err := <-created; err != nil {
		t.Errorf("upload in the claims' group: %v", err)
	}
}

// Small originals live in the database, one per document, larger ones in
// files, one per content; either is read back, counted, and goes with its
// last document, and so does a small original an older docsift kept by
// its content, shared and counted as files are.
func TestSmallOriginalsInTheDatabase(t *testing.T) {
	s, dir := openGroupTest(t)
	small := []byte("a short text")
	large := bytes.Repeat([]byte("a longer text. "), inlineOriginalMax/10)
	var docs []*store.Document
	for _, data := range [][]byte{small, small, large} {
		d := &store.Document{ProjectID: "prj_o", OwnerID: "prj_o", Name: "x.txt", Format: "text"}
		if _, err := s.CreateDocument(d, store.Bytes(data), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	files, _ := os.ReadDir(filepath.Join(dir, "files", "prj_o"))
	if len(files) != 1 || files[0].Name() != docs[2].FileHash {
		t.Errorf("files on disk: %v, want the large original's alone", files)
	}
	if n, err := s.StoredOriginals("prj_o"); n != 3 || err != nil {
		t.Errorf("StoredOriginals = %d, %v; want 3 (each small one, one large)", n, err)
	}

	// Two more documents of another short text, as a build of schema 3
	// left them: one original under its hash, counted twice.
	older := []byte("an older short text")
	for range 2 {
		d := &store.Document{ProjectID: "prj_o", OwnerID: "prj_o", Name: "y.txt", Format: "text"}
		if _, err := s.CreateDocument(d, store.Bytes(older), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketOriginals)
		for _, d := range docs[3:] {
			if err := b.Delete(ownerKey(d.OwnerID, []byte(d.ID))); err != nil {
				return err
			}
			if err := addFileRef(tx, d.OwnerID, d.FileHash, 1); err != nil {
				return err
			}
		}
		return b.Put(ownerKey("prj_o", []byte(docs[3].FileHash)), older)
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(i int) ([]byte, error) { return s.ReadOriginal(docs[i]) }
	for i := range docs {
		want := [][]byte{small, small, large, older, older}[i]
		if got, err := read(i); err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadOriginal of document %d: %d bytes, %v", i, len(got), err)
		}
	}
	for i, d := range docs {
		if _, err := s.DeleteDocument(d.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := read(i); !errors.Is(err, store.ErrNotFound) && i != 3 {
			t.Errorf("ReadOriginal of deleted document %d: %v, want ErrNotFound", i, err)
		}
	}
	if _, err := read(3); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the older original after its last document went: %v, want ErrNotFound", err)
	}
	if n, err := s.StoredOriginals("prj_o"); n != 0 || err != nil {
		t.Errorf("after deleting every document: %d originals left, %v", n, err)
	}
	if in, err := s.Inspect(); err != nil || in.FilesMissing != nil || in.FilesOrphaned != 0 {
		t.Errorf("Inspect after deleting every document: %+v, %v", in, err)
	}
}

// A file of schema 1, from before small originals were kept in it, is
// upgraded on open, so that a build of schema 1 refuses it afterwards
// instead of looking for those originals on disk.
func TestSchemaOneIsUpgraded(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchemaVersion, u64(1)) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Inspect()
	if err != nil || in.SchemaVersion != schemaVersion || schemaVersion < 2 {
		t.Fatalf("schema after opening a file of schema 1: %d (%v), want %d", in.SchemaVersion, err, schemaVersion)
	}
}

// TestRunningJobsListed checks that the running bucket lists exactly the
// PROCESSING jobs as they are claimed, retried and finished, and that a
// file of schema 2, which has no such list, gets it on open: the jobs a
// crash interrupted are requeued either way.
func TestRunningJobsListed(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		newDoc(t, s, "prj_x", fmt.Sprintf("document %d", i))
	}
	claimed, _, err := s.ClaimJobs(3, nil, nil)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claimed %d jobs (%v), want 3", len(claimed), err)
	}
	must(s.FinishJob(claimed[0].ID, 1, 0, ""))
	must(s.RetryJob(claimed[1].ID, s.Now().Add(time.Hour), "later"))
	running := func() []string {
		var ids []string
		must(s.db.View(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketRunning).ForEach(func(k, _ []byte) error {
				ids = append(ids, string(k))
				return nil
			})
		}))
		return ids
	}
	if got := running(); !slices.Equal(got, []string{claimed[2].ID}) {
		t.Fatalf("running %v, want only %s", got, claimed[2].ID)
	}

	// As a build of schema 2 left it: no list.
	must(s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketRunning); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, u64(2))
	}))
	s.Close()
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := running(); !slices.Equal(got, []string{claimed[2].ID}) {
		t.Fatalf("running after the upgrade %v, want only %s", got, claimed[2].ID)
	}
	if n, _, err := s.RequeueInterrupted(store.DefaultMaxInterrupted); n != 1 || err != nil {
		t.Fatalf("RequeueInterrupted = %d, %v; want the one job left running", n, err)
	}
	if got := running(); len(got) != 0 {
		t.Fatalf("running after the requeue: %v", got)
	}
	if n, _, err := s.RequeueInterrupted(store.DefaultMaxInterrupted); n != 0 || err != nil {
		t.Fatalf("RequeueInterrupted again = %d, %v; want none", n, err)
	}
}

// reopenAsLeftBy closes s, in dir, as a build of schema version left it,
// without the bucket that version lacked, and opens it again.
func reopenAsLeftBy(t *testing.T, s *Store, dir string, version uint64, lacked []byte) *Store {
	t.Helper()
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(lacked); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, u64(version))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A file of schema 4, from before documents were indexed by the upload
// session they came through, gets the index on open.
func TestSessionDocumentsIndexedOnUpgrade(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 3 {
		d := &store.Document{ProjectID: "prj_x", OwnerID: "prj_x", Name: fmt.Sprint(i), Format: "text",
			Metadata: map[string]string{store.SessionMetaKey: "ses_1"}}
		if _, err := s.CreateDocument(d, store.Bytes([]byte("text")), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, d.ID)
		newDoc(t, s, "prj_x", "not through a session")
	}
	s = reopenAsLeftBy(t, s, dir, 4, bucketSessionDocs)
	docs, err := s.SessionDocuments("prj_x", "ses_1")
	var got []string
	for _, d := range docs {
		got = append(got, d.ID)
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("session documents after the upgrade: %v (%v), want %v", got, err, want)
	}
}

// A file of schema 5, from before customers were indexed by their
// project, gets the index on open: every customer, in order, a page at a
// time.
func TestProjectCustomersIndexedOnUpgrade(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var project string
	var want []string
	for _, p := range []string{"a", "b"} {
		prj, _, err := s.CreateProject(p)
		if err != nil {
			t.Fatal(err)
		}
		project, want = prj.ID, nil
		for i := range 5 {
			c, err := s.CreateCustomer(prj.ID, fmt.Sprint(p, i), store.ProjectLimits{})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, c.ID)
		}
	}
	s = reopenAsLeftBy(t, s, dir, 5, bucketProjectCustomers)
	var got []string
	for after := ""; ; {
		cs, next, err := s.Customers(project, "", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			got = append(got, c.ID)
		}
		if next == "" {
			break
		}
		after = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("customers after the upgrade: %v, want %v", got, want)
	}
}

// A file of schema 6, from before the webhook outbox was kept by project
// too, gets the projects' outboxes on open: every queued delivery is
// claimed from them, a busy project's passed over, and none twice.
func TestProjectOutboxesIndexedOnUpgrade(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	queued := map[string]bool{}
	var projects, hooks []string
	for _, name := range []string{"a", "b"} {
		p, _, err := s.CreateProject(name)
		if err != nil {
			t.Fatal(err)
		}
		projects = append(projects, p.ID)
		for i := range 2 {
			w, err := s.CreateWebhook(p.ID, fmt.Sprintf("https://%s%d.example.test", name, i), []string{store.EventJobSucceeded})
			if err != nil {
				t.Fatal(err)
			}
			j, err := s.CreateDocument(&store.Document{ProjectID: p.ID, OwnerID: p.ID, Name: "n.txt", Format: "text"}, store.Bytes([]byte(fmt.Sprint(name, i))), store.ProjectLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.ClaimJob(nil); err != nil {
				t.Fatal(err)
			}
			if err := s.FinishJob(j.ID, 1, 1, ""); err != nil {
				t.Fatal(err)
			}
			hooks = append(hooks, w.ID)
		}
	}
	for _, w := range hooks {
		ds, err := s.Deliveries(w, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			queued[d.ID] = true
		}
	}
	if len(queued) != 6 { // each project's second job is heard by both its webhooks
		t.Fatalf("%d deliveries queued, want 6", len(queued))
	}
	// An entry an older build might have left without its delivery.
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketOutbox).Put(append(u64(1), u64(1)...), []byte("dlv_gone"))
	}); err != nil {
		t.Fatal(err)
	}
	s = reopenAsLeftBy(t, s, dir, 6, bucketProjectOutbox)
	if d, w, err := s.ClaimDelivery(time.Minute, nil, projects[:1]); err != nil || w.ProjectID != projects[1] {
		t.Fatalf("claim with project a busy = %+v to %+v, %v; want one of b's", d, w, err)
	} else {
		delete(queued, d.ID)
	}
	for len(queued) > 0 {
		d, _, err := s.ClaimDelivery(time.Minute, nil, nil)
		if err != nil {
			t.Fatalf("claim with %d deliveries queued: %v", len(queued), err)
		}
		if _, ok := queued[d.ID]; !ok {
			t.Fatalf("claimed %s, not queued or claimed before", d.ID)
		}
		delete(queued, d.ID)
	}
	if d, _, err := s.ClaimDelivery(time.Minute, nil, nil); !errors.Is(err, store.ErrNoDelivery) {
		t.Fatalf("claim with every delivery claimed = %+v, %v; want ErrNoDelivery", d, err)
	}
	if next, ok := s.NextDeliveryDue(); !ok || next.Before(time.Now()) {
		t.Fatalf("NextDeliveryDue = %v, %v; want the leases' end, not the dropped entry's due time", next, ok)
	}
}

// Data of an older schema is upgraded by Open, which says so, and left as
// it is by OpenAsIs, which refuses it: a backup taken to go back to the
// older version with must not be of upgraded data.
func TestOpenAsIsLeavesOlderDataAlone(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.UpgradedFrom() != 0 {
		t.Fatalf("a new store says it was upgraded from %d", s.UpgradedFrom())
	}
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketProjectCustomers); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, u64(5))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, err := os.ReadFile(filepath.Join(dir, DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := OpenAsIs(dir); !errors.Is(err, ErrOlderData) || !strings.Contains(err.Error(), "schema 5") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("OpenAsIs of schema 5 = %v, want ErrOlderData naming it", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, DBFileName)); !bytes.Equal(after, before) {
		t.Fatal("OpenAsIs changed the file it refused")
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.UpgradedFrom() != 5 {
		t.Fatalf("UpgradedFrom = %d, want 5", s.UpgradedFrom())
	}
	s.Close()
	s, err = OpenAsIs(dir)
	if err != nil {
		t.Fatalf("OpenAsIs of current data: %v", err)
	}
	defer s.Close()
	if s.UpgradedFrom() != 0 {
		t.Fatalf("current data says it was upgraded from %d", s.UpgradedFrom())
	}
}
