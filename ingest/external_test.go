package ingest_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// TestReplacementCrashBeforeIndexCommit: the process dies after a
// replacement's store transaction and before its index commit, so the
// snapshot on disk still holds the old version. On load the index is
// reconciled with the store: the old version's chunks and document are
// gone from it, the new version's are in it with their document, and the
// job's rerun then finishes the replacement.
func TestReplacementCrashBeforeIndexCommit(t *testing.T) {
	dir, owner := newProject(t)
	n := startNode(t, dir, llm.NewBuiltin())
	v1, doc1, err := n.engine.Submit(ingest.Upload{ProjectID: owner, OwnerID: owner, Name: "manual", Data: []byte(longText()),
		Metadata: map[string]string{"v": "1"}, ExternalID: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	if j := n.waitJob(v1.ID); j.Status != store.StatusSucceeded {
		t.Fatalf("v1: %s %s", j.Status, j.Error)
	}
	v1Seqs := n.ownerSeqs(owner)
	n.stop(context.Background()) // snapshots the index with v1

	// The replacement's job runs up to its store transaction, then the
	// process dies: the job stays PROCESSING, the index is not told.
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc2 := &store.Document{ProjectID: owner, OwnerID: owner, Name: "manual", Format: "text",
		Metadata: map[string]string{"v": "2"}, ExternalID: "manual"}
	if _, err := st.CreateDocument(doc2, store.Bytes([]byte("The new manual: grease the heliotrope valve monthly.")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.ClaimJob(nil); err != nil {
		t.Fatal(err)
	}
	em := llm.NewBuiltin()
	chunks := []store.Chunk{{Position: 0, Text: "The new manual: grease the heliotrope valve monthly."}}
	vecs, err := em.Embed(context.Background(), []string{chunks[0].Text})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReplaceChunks(doc2.ID, em.Model(), chunks, vecs); err != nil {
		t.Fatal(err)
	}

	// Loading the owner's index reconciles the snapshot with the store.
	logs := &logBuffer{}
	e := ingest.New(st, em, filepath.Join(dir, "index"), ingest.Config{}, slog.New(slog.NewTextHandler(logs, nil)))
	x, err := e.Indexes().Get(owner)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "index caught up with the store") {
		t.Errorf("the index was not loaded from its snapshot and caught up: %s", logs.String())
	}
	if got := x.IDs(); !slices.Equal(got, []uint64{chunks[0].Seq}) {
		t.Errorf("the loaded index holds %v, want only the new version's chunk %d (old: %v)", got, chunks[0].Seq, v1Seqs)
	}
	if d := x.Document(chunks[0].Seq); d == nil || d.ID != doc2.ID || d.Metadata["v"] != "2" {
		t.Errorf("the new chunk's document in the index: %+v", d)
	}
	old := func(d *index.Document) bool { return d.ID == doc1.ID || d.Metadata["v"] == "1" }
	if hits := x.Search(index.Query{Text: "heliotrope valve grease", K: 50, Filter: old}); len(hits) != 0 {
		t.Errorf("a filter on the old version still finds %d chunks", len(hits))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart reruns the interrupted job, which finds its document
	// already holding the external id.
	n2 := startNode(t, dir, llm.NewBuiltin())
	jobs, _, err := n2.store.Documents(owner, "", 1000)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("documents after the crash: %d, %v", len(jobs), err)
	}
	if j := n2.waitJob(jobs[0].JobID); j.Status != store.StatusSucceeded {
		t.Fatalf("the rerun: %s %s", j.Status, j.Error)
	}
	for _, res := range n2.search(owner, "heliotrope valve grease") {
		if res.Chunk.DocumentID != doc2.ID {
			t.Errorf("after the rerun a search finds a chunk of %s", res.Chunk.DocumentID)
		}
	}
	if d, err := n2.store.DocumentByExternalID(owner, "manual"); err != nil || d.ID != doc2.ID {
		t.Errorf("external id held by %+v, %v; want %s", d, err, doc2.ID)
	}
}
