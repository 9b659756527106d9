package storetest

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// Jobs is the slice of documents and the jobs that index them, as far as
// they need no chunks or vectors: creating a document with its original
// and its job, reading, listing and deleting documents, and the queue.
type Jobs interface {
	store.DocumentStore
	store.JobStore
	ReplaceChunks(documentID, model string, chunks []store.Chunk, vectors [][]float32) ([]uint64, error)
	OwnerSeqs(ownerID string) ([]uint64, error)
	SetClock(now func() time.Time)
}

// RunJobs runs every test of the Jobs slice, each on a new store.
func RunJobs(t *testing.T, open func(t *testing.T) Jobs) {
	t.Run("DocumentsCreateListDelete", func(t *testing.T) { documentsCreateListDelete(t, open(t)) })
	t.Run("DocumentsInPages", func(t *testing.T) { documentsInPages(t, open(t)) })
	t.Run("SessionDocuments", func(t *testing.T) { sessionDocuments(t, open(t)) })
	t.Run("ClaimByDueTime", func(t *testing.T) { claimByDueTime(t, open(t)) })
	t.Run("RetryOfAQueuedJobMovesIt", func(t *testing.T) { retryOfAQueuedJobMovesIt(t, open(t)) })
	t.Run("ConcurrentClaimsTakeEachJobOnce", func(t *testing.T) { concurrentClaims(t, open(t)) })
	t.Run("ProgressAndFinish", func(t *testing.T) { progressAndFinish(t, open(t)) })
	t.Run("RequeueInterrupted", func(t *testing.T) { requeueInterrupted(t, open(t)) })
	t.Run("InterruptedTooOftenFails", func(t *testing.T) { interruptedTooOftenFails(t, open(t)) })
	t.Run("OpenOriginalReadsWhatWasStored", func(t *testing.T) { openOriginalReadsWhatWasStored(t, open(t)) })
	t.Run("FairBetweenProjects", func(t *testing.T) { fairBetweenProjects(t, open(t)) })
	t.Run("FairBetweenOwners", func(t *testing.T) { fairBetweenOwners(t, open(t)) })
	t.Run("SlowRunsCostTurns", func(t *testing.T) { slowRunsCostTurns(t, open(t)) })
	t.Run("ClaimPassesOverSkippedProjects", func(t *testing.T) { claimPassesOverSkipped(t, open(t)) })
	t.Run("JobOfDeletedDocument", func(t *testing.T) { jobOfDeletedDocument(t, open(t)) })
}

func upload(t *testing.T, s Jobs, owner, name, content string) (*store.Document, *store.Job) {
	t.Helper()
	return uploadTo(t, s, "prj_test", owner, name, content)
}

func uploadTo(t *testing.T, s Jobs, project, owner, name, content string) (*store.Document, *store.Job) {
	t.Helper()
	d := &store.Document{ProjectID: project, OwnerID: owner, Name: name, Format: "text"}
	j, err := s.CreateDocument(d, store.Bytes([]byte(content)), store.ProjectLimits{})
	if err != nil {
		t.Fatalf("CreateDocument(%s): %v", name, err)
	}
	return d, j
}

func mustJob(t *testing.T, s Jobs, id string) *store.Job {
	t.Helper()
	j, err := s.Job(id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	return j
}

func mustDoc(t *testing.T, s Jobs, id string) *store.Document {
	t.Helper()
	d, err := s.Document(id)
	if err != nil {
		t.Fatalf("Document(%s): %v", id, err)
	}
	return d
}

func mustClaim(t *testing.T, s Jobs) (*store.Job, *store.Document) {
	t.Helper()
	j, d, err := s.ClaimJob(nil)
	if err != nil {
		t.Fatalf("ClaimJob: %v", err)
	}
	return j, d
}

func documentsCreateListDelete(t *testing.T, s Jobs) {
	c := newClock(s)
	in := &store.Document{ProjectID: "prj_test", OwnerID: "alice", Name: "a.txt", Format: "text",
		Metadata: map[string]string{"lang": "en"}, ExternalID: "ext-1"}
	job, err := s.CreateDocument(in, store.Bytes([]byte("same words")), store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(in.ID, store.PrefixDocument) || !strings.HasPrefix(job.ID, store.PrefixJob) ||
		in.JobID != job.ID || job.DocumentID != in.ID || in.Status != store.StatusPending || job.Status != store.StatusPending ||
		in.Size != 10 || in.FileHash == "" || !in.CreatedAt.Equal(c.Now()) || job.OwnerID != "alice" || job.ProjectID != "prj_test" {
		t.Fatalf("created document %+v with job %+v", in, job)
	}
	got := mustDoc(t, s, in.ID)
	if got.Name != "a.txt" || got.OwnerID != "alice" || got.Metadata["lang"] != "en" || len(got.Metadata) != 1 ||
		got.FileHash != in.FileHash || got.Size != 10 || got.JobID != job.ID || got.ExternalID != "ext-1" ||
		got.Seq != in.Seq || !got.CreatedAt.Equal(in.CreatedAt) || got.Status != store.StatusPending {
		t.Fatalf("Document = %+v, want %+v", got, in)
	}
	if j := mustJob(t, s, job.ID); j.Status != store.StatusPending || j.Attempts != 0 || !j.CreatedAt.Equal(c.Now()) {
		t.Fatalf("Job = %+v", j)
	}
	c.Advance(time.Second)
	second, _ := upload(t, s, "alice", "b.txt", "same words") // one content, two documents
	c.Advance(time.Second)
	other, _ := upload(t, s, "bob", "c.txt", "other words")
	if second.Seq <= in.Seq || other.Seq <= second.Seq || second.FileHash != in.FileHash {
		t.Fatalf("seqs %d, %d, %d, hashes %s, %s: want increasing seqs and one hash for one content",
			in.Seq, second.Seq, other.Seq, in.FileHash, second.FileHash)
	}
	docs, next, err := s.Documents("alice", "", 10)
	if err != nil || len(docs) != 2 || docs[0].ID != second.ID || docs[1].ID != in.ID || next != "" {
		t.Fatalf("Documents(alice) = %+v, %q, %v; want b.txt then a.txt, and no next page", docs, next, err)
	}
	if docs, next, err := s.Documents("nobody", "", 10); len(docs) != 0 || next != "" || err != nil {
		t.Fatalf("Documents(nobody) = %+v, %q, %v", docs, next, err)
	}
	if data, err := s.ReadOriginal(in); err != nil || string(data) != "same words" {
		t.Fatalf("ReadOriginal = %q, %v", data, err)
	}
	forged := &store.Document{ID: in.ID, OwnerID: "bob", FileHash: in.FileHash}
	if _, err := s.ReadOriginal(forged); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another owner's original: err = %v, want ErrNotFound", err)
	}

	c.Advance(time.Second)
	if _, err := s.DeleteDocument(in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Document(in.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted document: err = %v, want ErrNotFound", err)
	}
	if j := mustJob(t, s, job.ID); j.Status != store.StatusFailed || j.Error == "" {
		t.Fatalf("job of a document deleted before it ran = %+v, want FAILED with a reason", j)
	}
	if data, err := s.ReadOriginal(second); err != nil || string(data) != "same words" {
		t.Fatalf("the original of another document with the same content: %q, %v", data, err)
	}
	if _, err := s.DeleteDocument(second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadOriginal(second); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("original without documents: err = %v, want ErrNotFound", err)
	}
	if docs, _, _ := s.Documents("alice", "", 10); len(docs) != 0 {
		t.Fatalf("Documents after deletes = %+v", docs)
	}
	if _, err := s.DeleteDocument(in.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: err = %v, want ErrNotFound", err)
	}
	if n, _, _ := s.PendingJobs(); n != 1 {
		t.Fatalf("PendingJobs = %d, want 1 (bob's)", n)
	}
}

// documentsInPages lists an owner's documents a page at a time while
// documents are added and deleted between pages: every document there
// from the first page to the last is listed once, newest first, and the
// owners on either side of it (in key order) are never mixed in.
func documentsInPages(t *testing.T, s Jobs) {
	for _, owner := range []string{"alic", "alice2", "alicf"} {
		upload(t, s, owner, "neighbour.txt", "not alice's")
	}
	var want []string // alice's, oldest first
	for i := range 7 {
		d, _ := upload(t, s, "alice", fmt.Sprintf("%d.txt", i), "words")
		want = append(want, d.ID)
	}
	page := func(after string, limit int) ([]string, string) {
		t.Helper()
		docs, next, err := s.Documents("alice", after, limit)
		if err != nil {
			t.Fatalf("Documents(alice, %q, %d): %v", after, limit, err)
		}
		ids := make([]string, len(docs))
		for i, d := range docs {
			if d.OwnerID != "alice" {
				t.Fatalf("Documents(alice) listed %s of %q", d.ID, d.OwnerID)
			}
			ids[i] = d.ID
		}
		return ids, next
	}
	ids, next := page("", 3)
	if !slices.Equal(ids, []string{want[6], want[5], want[4]}) || next != want[4] {
		t.Fatalf("first page %v, next %q; want the three newest, then %q", ids, next, want[4])
	}
	// Between pages: a new document (newer than every page: not listed),
	// and the document the cursor names and one not yet listed go.
	upload(t, s, "alice", "late.txt", "words")
	for _, id := range []string{want[4], want[2]} {
		if _, err := s.DeleteDocument(id); err != nil {
			t.Fatal(err)
		}
	}
	ids, next = page(next, 3)
	if !slices.Equal(ids, []string{want[3], want[1], want[0]}) || next != "" {
		t.Fatalf("second page %v, next %q; want %v and no next page", ids, next, []string{want[3], want[1], want[0]})
	}
	if ids, next := page(want[0], 3); len(ids) != 0 || next != "" {
		t.Fatalf("page after the oldest: %v, %q; want none", ids, next)
	}
	// A page as long as what is left says there is no next page.
	if ids, next = page("", 6); len(ids) != 6 || next != "" {
		t.Fatalf("a page of all 6: %d documents, next %q; want no next page", len(ids), next)
	}
	if _, _, err := s.Documents("alice", "", 0); err == nil {
		t.Fatal("Documents with limit 0: no error")
	}
}

// sessionDocuments lists the documents uploaded through one session, in
// the order they were uploaded, and drops those deleted.
func sessionDocuments(t *testing.T, s Jobs) {
	put := func(owner, name, session string) *store.Document {
		t.Helper()
		d := &store.Document{ProjectID: "prj_test", OwnerID: owner, Name: name, Format: "text"}
		if session != "" {
			d.Metadata = map[string]string{store.SessionMetaKey: session, "team": "a"}
		}
		if _, err := s.CreateDocument(d, store.Bytes([]byte(name)), store.ProjectLimits{}); err != nil {
			t.Fatalf("CreateDocument(%s): %v", name, err)
		}
		return d
	}
	a1 := put("alice", "1.txt", "ses_a")
	put("alice", "2.txt", "")
	put("alice", "3.txt", "ses_b")
	put("bob", "4.txt", "ses_a") // a forged session id of another owner's
	a5 := put("alice", "5.txt", "ses_a")
	a6 := put("alice", "6.txt", "ses_a")
	ids := func(session string) []string {
		t.Helper()
		docs, err := s.SessionDocuments("alice", session)
		if err != nil {
			t.Fatalf("SessionDocuments(alice, %s): %v", session, err)
		}
		var out []string
		for _, d := range docs {
			out = append(out, d.Name)
		}
		return out
	}
	if got := ids("ses_a"); !slices.Equal(got, []string{a1.Name, a5.Name, a6.Name}) {
		t.Fatalf("session a: %v, want 1.txt 5.txt 6.txt", got)
	}
	if _, err := s.DeleteDocument(a5.ID); err != nil {
		t.Fatal(err)
	}
	if got := ids("ses_a"); !slices.Equal(got, []string{a1.Name, a6.Name}) {
		t.Fatalf("session a after deleting 5.txt: %v, want 1.txt 6.txt", got)
	}
	if got := ids("ses_none"); len(got) != 0 {
		t.Fatalf("a session without uploads: %v", got)
	}
}

func claimByDueTime(t *testing.T, s Jobs) {
	c := newClock(s)
	t0 := c.Now()
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("empty queue: err = %v, want ErrNoJob", err)
	}
	if _, ok := s.NextDue(); ok {
		t.Fatal("NextDue on an empty queue reports a job")
	}
	x, xJob := upload(t, s, "alice", "x", "x")
	c.Advance(time.Second)
	_, yJob := upload(t, s, "alice", "y", "y")
	if n, oldest, err := s.PendingJobs(); err != nil || n != 2 || !oldest.Equal(t0) {
		t.Fatalf("PendingJobs = %d, %v, %v; want 2 since %v", n, oldest, err, t0)
	}
	j, d := mustClaim(t, s)
	if j.ID != xJob.ID || d.ID != x.ID || j.Status != store.StatusProcessing || j.Attempts != 1 || d.Status != store.StatusProcessing {
		t.Fatalf("first claim = %+v, %+v; want x's job PROCESSING, attempt 1", j, d)
	}
	if got := mustDoc(t, s, x.ID); got.Status != store.StatusProcessing {
		t.Fatalf("claimed document status %s", got.Status)
	}
	if j, _ := mustClaim(t, s); j.ID != yJob.ID {
		t.Fatalf("second claim = %s, want y's job %s", j.ID, yJob.ID)
	}
	// Retried, the later-created y is due first and so claimed first.
	if err := s.RetryJob(xJob.ID, t0.Add(20*time.Second), "busy"); err != nil {
		t.Fatal(err)
	}
	if err := s.RetryJob(yJob.ID, t0.Add(15*time.Second), "busy"); err != nil {
		t.Fatal(err)
	}
	xj, xd := mustJob(t, s, xJob.ID), mustDoc(t, s, x.ID)
	if xj.Status != store.StatusPending || xj.Error != "busy" || !xj.NotBefore.Equal(t0.Add(20*time.Second)) ||
		xd.Status != store.StatusPending || xd.Error != "busy" {
		t.Fatalf("retried job %+v, document %+v", xj, xd)
	}
	if next, ok := s.NextDue(); !ok || !next.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("NextDue = %v, %v; want %v", next, ok, t0.Add(15*time.Second))
	}
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("claim before anything is due: err = %v, want ErrNoJob", err)
	}
	// A new job is due when created: it goes ahead of the waiting retries.
	_, zJob := upload(t, s, "alice", "z", "z")
	if j, _ := mustClaim(t, s); j.ID != zJob.ID || j.Attempts != 1 {
		t.Fatalf("claim while retries wait = %+v, want the new z's job", j)
	}
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("claim before the retries are due: err = %v, want ErrNoJob", err)
	}
	// A retry is due at its not-before time, not after it.
	c.t = t0.Add(15 * time.Second)
	if j, _ := mustClaim(t, s); j.ID != yJob.ID || j.Attempts != 2 {
		t.Fatalf("claim at y's not-before = %+v, want y's job, attempt 2", j)
	}
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("claim before x is due: err = %v, want ErrNoJob", err)
	}
	c.t = t0.Add(20 * time.Second)
	if j, _ := mustClaim(t, s); j.ID != xJob.ID || j.Attempts != 2 {
		t.Fatalf("claim at x's not-before = %+v, want x's job, attempt 2", j)
	}
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("drained queue: err = %v, want ErrNoJob", err)
	}
	if n, _, _ := s.PendingJobs(); n != 0 {
		t.Fatalf("PendingJobs = %d after claiming all", n)
	}
	if err := s.RetryJob("job_nope", t0, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RetryJob(unknown): err = %v, want ErrNotFound", err)
	}
}

// retryOfAQueuedJobMovesIt: retrying a job that is still queued moves its
// place in the queue; it does not queue it a second time.
func retryOfAQueuedJobMovesIt(t *testing.T, s Jobs) {
	c := newClock(s)
	_, j := upload(t, s, "alice", "a", "a")
	if err := s.RetryJob(j.ID, c.Now().Add(time.Hour), "later"); err != nil {
		t.Fatal(err)
	}
	if next, ok := s.NextDue(); !ok || !next.Equal(c.Now().Add(time.Hour)) {
		t.Fatalf("NextDue = %v, %v; want the retry's %v", next, ok, c.Now().Add(time.Hour))
	}
	if err := s.RetryJob(j.ID, c.Now(), "now after all"); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.PendingJobs(); err != nil || n != 1 {
		t.Fatalf("PendingJobs = %d, %v; want the one job", n, err)
	}
	if got, _ := mustClaim(t, s); got.ID != j.ID {
		t.Fatalf("claimed %s, want %s", got.ID, j.ID)
	}
	c.Advance(2 * time.Hour)
	if got, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("the job was queued twice: claimed %+v again, %v", got, err)
	}
}

func concurrentClaims(t *testing.T, s Jobs) {
	newClock(s)
	const jobs, claimers = 40, 4
	want := map[string]bool{}
	for i := range jobs {
		_, j := upload(t, s, "alice", fmt.Sprint("doc", i), fmt.Sprint("content ", i))
		want[j.ID] = true
	}
	seen := claimConcurrently(t, claimers, func() (string, error) {
		j, _, err := s.ClaimJob(nil)
		if errors.Is(err, store.ErrNoJob) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return j.ID, nil
	})
	if len(seen) != len(want) {
		t.Fatalf("%d jobs claimed, want %d", len(seen), len(want))
	}
	for id := range want {
		if j := mustJob(t, s, id); j.Attempts != 1 || j.Status != store.StatusProcessing {
			t.Fatalf("job %+v: want claimed once", j)
		}
	}
}

func progressAndFinish(t *testing.T, s Jobs) {
	c := newClock(s)
	ok, okJob := upload(t, s, "alice", "ok", "ok")
	bad, badJob := upload(t, s, "alice", "bad", "bad")
	mustClaim(t, s)
	mustClaim(t, s)
	if err := s.SetJobProgress(okJob.ID, store.JobProgress{PagesDone: 1, Pages: 3}); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, okJob.ID); j.Progress == nil || *j.Progress != (store.JobProgress{PagesDone: 1, Pages: 3}) {
		t.Fatalf("progress = %+v", j.Progress)
	}
	c.Advance(time.Minute)
	if err := s.FinishJob(okJob.ID, 5, 3, ""); err != nil {
		t.Fatal(err)
	}
	j, d := mustJob(t, s, okJob.ID), mustDoc(t, s, ok.ID)
	if j.Status != store.StatusSucceeded || j.Chunks != 5 || j.ChunksEmbedded != 5 || j.Progress != nil || j.Error != "" ||
		!j.UpdatedAt.Equal(c.Now()) || d.Status != store.StatusSucceeded || d.Chunks != 5 || d.Pages != 3 || !d.UpdatedAt.Equal(c.Now()) {
		t.Fatalf("finished job %+v, document %+v", j, d)
	}
	// A report arriving after the end is dropped, not an error.
	if err := s.SetJobProgress(okJob.ID, store.JobProgress{PagesDone: 3, Pages: 3}); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, okJob.ID); j.Progress != nil {
		t.Fatalf("progress recorded on an ended job: %+v", j.Progress)
	}
	if err := s.FinishJob(badJob.ID, 0, 0, "unreadable"); err != nil {
		t.Fatal(err)
	}
	j, d = mustJob(t, s, badJob.ID), mustDoc(t, s, bad.ID)
	if j.Status != store.StatusFailed || j.Error != "unreadable" || d.Status != store.StatusFailed || d.Error != "unreadable" {
		t.Fatalf("failed job %+v, document %+v", j, d)
	}
	if err := s.SetJobProgress("job_nope", store.JobProgress{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetJobProgress(unknown): err = %v, want ErrNotFound", err)
	}
	if err := s.FinishJob("job_nope", 0, 0, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FinishJob(unknown): err = %v, want ErrNotFound", err)
	}
}

// A job interrupted as often as the limit fails, its chunks gone with
// it, and is never claimed again; one interrupted less often runs again,
// its count kept.
func interruptedTooOftenFails(t *testing.T, s Jobs) {
	c := newClock(s)
	bad, badJob := upload(t, s, "alice", "bomb", "boom")
	c.Advance(time.Second)
	_, goodJob := upload(t, s, "alice", "fine", "fine")
	// Both run when the server dies; the bomb had written a chunk.
	mustClaim(t, s)
	mustClaim(t, s)
	if _, err := s.ReplaceChunks(bad.ID, "m", []store.Chunk{{Position: 0, Text: "boom"}}, [][]float32{{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if n, failed, err := s.RequeueInterrupted(2); err != nil || n != 2 || len(failed) != 0 {
		t.Fatalf("first requeue: %d requeued, %v failed, %v; want 2 and none", n, failed, err)
	}
	// The bomb runs again, alone, and the server dies again.
	if j, _ := mustClaim(t, s); j.ID != badJob.ID || j.Interrupted != 1 {
		t.Fatalf("claimed %+v, want %s interrupted once", j, badJob.ID)
	}
	n, failed, err := s.RequeueInterrupted(2)
	if err != nil || n != 0 || len(failed) != 1 || failed[0].ID != badJob.ID {
		t.Fatalf("second requeue: %d requeued, failed %v, %v; want %s failed", n, failed, err, badJob.ID)
	}
	j, d := mustJob(t, s, badJob.ID), mustDoc(t, s, bad.ID)
	if j.Status != store.StatusFailed || j.Interrupted != 2 || !strings.Contains(j.Error, "stopped the server while it was being processed") ||
		d.Status != store.StatusFailed || d.Error != j.Error || d.Chunks != 0 {
		t.Fatalf("after two interruptions: job %+v, document %+v", j, d)
	}
	if seqs, err := s.OwnerSeqs("alice"); err != nil || len(seqs) != 0 {
		t.Fatalf("the failed document's chunks are left: %v, %v", seqs, err)
	}
	if g := mustJob(t, s, goodJob.ID); g.Status != store.StatusPending || g.Interrupted != 1 {
		t.Fatalf("the other job: %+v, want PENDING, interrupted once", g)
	}
	if claimed, _ := mustClaim(t, s); claimed.ID != goodJob.ID {
		t.Fatalf("claimed %s; the failed job must never be claimed again", claimed.ID)
	}
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("a second claim: %v, want ErrNoJob", err)
	}
}

func requeueInterrupted(t *testing.T, s Jobs) {
	c := newClock(s)
	var ids []string
	for i := range 3 {
		_, j := upload(t, s, "alice", fmt.Sprint("doc", i), fmt.Sprint(i))
		ids = append(ids, j.ID)
		c.Advance(time.Second)
	}
	a, _ := mustClaim(t, s)
	b, _ := mustClaim(t, s)
	if err := s.SetJobProgress(a.ID, store.JobProgress{PagesDone: 1, Pages: 2}); err != nil {
		t.Fatal(err)
	}
	if n, failed, err := s.RequeueInterrupted(2); err != nil || n != 2 || len(failed) != 0 {
		t.Fatalf("RequeueInterrupted = %d, %v; want 2", n, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		j := mustJob(t, s, id)
		if d := mustDoc(t, s, j.DocumentID); j.Status != store.StatusPending || j.Progress != nil || d.Status != store.StatusPending {
			t.Fatalf("requeued job %+v, document status %s", j, d.Status)
		}
	}
	if n, _, _ := s.PendingJobs(); n != 3 {
		t.Fatalf("PendingJobs = %d after requeue, want 3", n)
	}
	if n, _, err := s.RequeueInterrupted(2); err != nil || n != 0 {
		t.Fatalf("second RequeueInterrupted = %d, %v; want 0", n, err)
	}
	attempts := map[string]int{}
	for range 3 {
		j, _ := mustClaim(t, s)
		attempts[j.ID] = j.Attempts
	}
	if attempts[ids[0]] != 2 || attempts[ids[1]] != 2 || attempts[ids[2]] != 1 {
		t.Fatalf("attempts after requeue = %v; want the interrupted two at 2", attempts)
	}
}

func jobOfDeletedDocument(t *testing.T, s Jobs) {
	c := newClock(s)
	d, job := upload(t, s, "alice", "gone", "gone")
	mustClaim(t, s)
	if _, err := s.DeleteDocument(d.ID); err != nil {
		t.Fatal(err)
	}
	// A running job is left to notice the deletion when it ends.
	if j := mustJob(t, s, job.ID); j.Status != store.StatusProcessing {
		t.Fatalf("running job of a deleted document = %+v, want still PROCESSING", j)
	}
	if err := s.RetryJob(job.ID, c.Now(), "busy"); err != nil {
		t.Fatal(err)
	}
	// Its retry must not head the queue for ever: claiming ends it.
	later, laterJob := upload(t, s, "alice", "later", "later")
	j, got := mustClaim(t, s)
	if j.ID != laterJob.ID || got.ID != later.ID {
		t.Fatalf("claim = %+v; want the later document's job", j)
	}
	if j := mustJob(t, s, job.ID); j.Status != store.StatusFailed || j.Error == "" {
		t.Fatalf("job of a deleted document = %+v, want FAILED with a reason", j)
	}
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("err = %v, want ErrNoJob", err)
	}
}

// claimOrder claims every due job and returns their documents' names in
// the order they were claimed.
func claimOrder(t *testing.T, s Jobs) []string {
	t.Helper()
	var names []string
	for {
		_, d, err := s.ClaimJob(nil)
		if errors.Is(err, store.ErrNoJob) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
	}
}

// A project's backlog does not hold back another project's upload: the
// queue takes the projects in turn, not the jobs in order of arrival.
func fairBetweenProjects(t *testing.T, s Jobs) {
	c := newClock(s)
	for i := range 6 {
		uploadTo(t, s, "prj_a", "prj_a", fmt.Sprint("a", i), "a")
		c.Advance(time.Millisecond)
	}
	uploadTo(t, s, "prj_b", "prj_b", "b0", "b")
	c.Advance(time.Millisecond)
	uploadTo(t, s, "prj_b", "prj_b", "b1", "b")
	got := strings.Join(claimOrder(t, s), " ")
	if want := "a0 b0 a1 b1 a2 a3 a4 a5"; got != want {
		t.Fatalf("claimed %s; want the projects in turn: %s", got, want)
	}
	// A project that comes back after a pause takes its turn from where
	// the queue has come, with no credit for the wait: b gets its turn
	// before a, which had the last, and then they alternate.
	for i := range 3 {
		uploadTo(t, s, "prj_a", "prj_a", fmt.Sprint("a", 6+i), "a")
		uploadTo(t, s, "prj_b", "prj_b", fmt.Sprint("b", 2+i), "b")
		c.Advance(time.Millisecond)
	}
	if got, want := strings.Join(claimOrder(t, s), " "), "b2 a6 b3 a7 b4 a8"; got != want {
		t.Fatalf("claimed %s; want %s", got, want)
	}
}

// Within a project, one customer's backlog does not hold back another's.
func fairBetweenOwners(t *testing.T, s Jobs) {
	c := newClock(s)
	for i := range 4 {
		uploadTo(t, s, "prj_a", "cus_x", fmt.Sprint("x", i), "x")
		c.Advance(time.Millisecond)
	}
	uploadTo(t, s, "prj_a", "cus_y", "y0", "y")
	if got, want := strings.Join(claimOrder(t, s), " "), "x0 y0 x1 x2 x3"; got != want {
		t.Fatalf("claimed %s; want the owners in turn: %s", got, want)
	}
}

// A project whose jobs run long gets fewer turns: each second a run took
// moves its place on as a turn does.
func slowRunsCostTurns(t *testing.T, s Jobs) {
	c := newClock(s)
	for i := range 4 {
		uploadTo(t, s, "prj_a", "prj_a", fmt.Sprint("a", i), "a")
	}
	j, _ := mustClaim(t, s)
	c.Advance(3*store.CostUnit + time.Millisecond) // a0 runs three units long
	if err := s.FinishJob(j.ID, 1, 1, ""); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		uploadTo(t, s, "prj_b", "prj_b", fmt.Sprint("b", i), "b")
	}
	if got, want := strings.Join(claimOrder(t, s), " "), "b0 b1 b2 a1 a2 a3"; got != want {
		t.Fatalf("claimed %s; want b's three turns before a's next: %s", got, want)
	}
}

// A claim that skips projects (those with a job running, when every
// worker is busy) takes the next job of another project, and leaves the
// skipped ones their places.
func claimPassesOverSkipped(t *testing.T, s Jobs) {
	c := newClock(s)
	for i := range 3 {
		uploadTo(t, s, "prj_a", "prj_a", fmt.Sprint("a", i), "a")
		c.Advance(time.Millisecond)
	}
	if _, _, err := s.ClaimJob([]string{"prj_a"}); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("a claim skipping the only project: %v, want ErrNoJob", err)
	}
	uploadTo(t, s, "prj_b", "prj_b", "b0", "b")
	_, d, err := s.ClaimJob([]string{"prj_a"})
	if err != nil || d.Name != "b0" {
		t.Fatalf("a claim skipping prj_a took %v, %v; want b0", d, err)
	}
	if got, want := strings.Join(claimOrder(t, s), " "), "a0 a1 a2"; got != want {
		t.Fatalf("then %s; want %s", got, want)
	}
}

// OpenOriginal reads what was stored, small (kept with the records) and
// large (a file, or pieces), without reading it whole.
func openOriginalReadsWhatWasStored(t *testing.T, s Jobs) {
	for _, size := range []int{100, 300 << 10} {
		content := strings.Repeat("x", size-1) + "!"
		d, _ := upload(t, s, "alice", fmt.Sprint("doc", size), content)
		o, err := s.OpenOriginal(d)
		if err != nil {
			t.Fatalf("OpenOriginal of %d bytes: %v", size, err)
		}
		got, err := io.ReadAll(o.Reader())
		o.Close()
		if err != nil || string(got) != content || o.Size() != int64(size) {
			t.Fatalf("OpenOriginal of %d bytes read %d bytes (%v), size %d", size, len(got), err, o.Size())
		}
		tail := make([]byte, 1)
		if o2, err := s.OpenOriginal(d); err != nil {
			t.Fatal(err)
		} else if _, err := o2.ReaderAt().ReadAt(tail, int64(size-1)); (err != nil && err != io.EOF) || tail[0] != '!' {
			t.Fatalf("reading the last byte at %d: %q, %v", size-1, tail, err)
		} else {
			o2.Close()
		}
	}
}
