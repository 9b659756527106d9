package bolt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/docsift/docsift/store"
)

// ClaimJobs takes the due jobs in queue order in one commit, and stops at
// the first whose document the caller refuses, which stays queued for the
// next claim; the first job is claimed whatever its document.
func TestClaimJobsStopsAtARefusedDocument(t *testing.T) {
	s, _ := openGroupTest(t)
	var want []string
	for i, format := range []string{"pdf", "text", "text", "pdf", "text"} {
		d := &store.Document{ProjectID: "prj_c", OwnerID: "prj_c", Name: fmt.Sprintf("d%d", i), Format: format}
		j, err := s.CreateDocument(d, store.Bytes([]byte(fmt.Sprintf("document %d", i))), store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, j.ID)
	}
	text := func(d *store.Document) bool { return d.Format == "text" }

	before := txID(t, s)
	jobs, docs, err := s.ClaimJobs(10, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := txID(t, s) - before; got != 1 {
		t.Errorf("claiming took %d commits, want 1", got)
	}
	claimed := func(jobs []*store.Job, docs []*store.Document) []string {
		var ids []string
		for i, j := range jobs {
			if j.Status != store.StatusProcessing || j.Attempts != 1 || docs[i].ID != j.DocumentID {
				t.Errorf("claimed job %+v of document %+v", j, docs[i])
			}
			ids = append(ids, j.ID)
		}
		return ids
	}
	if got := claimed(jobs, docs); fmt.Sprint(got) != fmt.Sprint(want[:3]) {
		t.Fatalf("first claim = %v, want %v", got, want[:3])
	}
	for _, id := range want[:3] {
		if j, err := s.Job(id); err != nil || j.Status != store.StatusProcessing {
			t.Errorf("job %s after its claim: %+v, %v", id, j, err)
		}
	}
	if j, err := s.Job(want[3]); err != nil || j.Status != store.StatusPending {
		t.Errorf("refused job %s: %+v, %v; want it still PENDING", want[3], j, err)
	}

	// The refused one heads the queue, and is claimed first next time.
	jobs, docs, err = s.ClaimJobs(1, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := claimed(jobs, docs); fmt.Sprint(got) != fmt.Sprint(want[3:4]) {
		t.Fatalf("second claim = %v, want %v", got, want[3:4])
	}
	jobs, docs, err = s.ClaimJobs(10, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := claimed(jobs, docs); fmt.Sprint(got) != fmt.Sprint(want[4:]) {
		t.Fatalf("third claim = %v, want %v", got, want[4:])
	}
	if _, _, err := s.ClaimJobs(10, nil, nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("claim of an empty queue: %v, want ErrNoJob", err)
	}
}
