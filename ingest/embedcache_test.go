package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// countingEmbedder counts the texts it is asked to embed, and fails once
// failAfter texts have been embedded (when failAfter > 0), as a model server
// that goes away midway would.
type countingEmbedder struct {
	llm.Embedder
	mu        sync.Mutex
	texts     int
	failAfter int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	if c.failAfter > 0 && c.texts+len(texts) > c.failAfter {
		c.mu.Unlock()
		return nil, errors.New("counting embedder: gone")
	}
	c.texts += len(texts)
	c.mu.Unlock()
	return c.Embedder.Embed(ctx, texts)
}

// take returns the texts embedded since the last call.
func (c *countingEmbedder) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.texts
	c.texts = 0
	return n
}

func newCounting() *countingEmbedder { return &countingEmbedder{Embedder: llm.NewBuiltin()} }

// paragraphs is n distinct sentences about topic, 17 words each, so that
// documents made of a few dozen have several chunks.
func paragraphs(topic string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Clause %d of the %s explains obligation %d and the notice period that applies to it. ", i+1, topic, i*7)
	}
	return b.String()
}

func submitWait(t *testing.T, e *Engine, owner, name, text string) *store.Job {
	t.Helper()
	job, _, err := e.Submit(Upload{ProjectID: "prj_p", OwnerID: owner, Name: name, Data: []byte(text)})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, e, job.ID)
	if j.Status != store.StatusSucceeded {
		t.Fatalf("job %+v", j)
	}
	return j
}

// docVectors returns the vectors of a document's chunks, by chunk text.
func docVectors(t *testing.T, st *bolt.Store, model, owner, docID string) map[string][]float32 {
	t.Helper()
	seqs, err := st.OwnerSeqs(owner)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := st.ChunksBySeq(seqs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, c := range chunks {
		if c.DocumentID != docID {
			continue
		}
		v, err := st.Vector(model, c.Seq)
		if err != nil {
			t.Fatal(err)
		}
		out[c.Text] = v
	}
	return out
}

// TestEmbedCacheReuploadAndRerun uploads a document twice and re-runs a
// finished job as a crash before its outcome was recorded would: neither
// sends a text to the embedder, and the vectors are the ones it made.
func TestEmbedCacheReuploadAndRerun(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	em := newCounting()
	e := startEngine(t, st, dir, em)
	text := paragraphs("lease", 60)
	first := submitWait(t, e, "cus_a", "lease.txt", text)
	if got := em.take(); got != first.Chunks || got < 3 {
		t.Fatalf("first upload embedded %d texts for %d chunks", got, first.Chunks)
	}
	again := submitWait(t, e, "cus_a", "lease.txt", text)
	if got := em.take(); got != 0 {
		t.Errorf("the same document uploaded again embedded %d texts, want 0", got)
	}
	a := docVectors(t, st, em.Model(), "cus_a", first.DocumentID)
	b := docVectors(t, st, em.Model(), "cus_a", again.DocumentID)
	if len(a) != len(b) || len(b) == 0 {
		t.Fatalf("vectors: %d and %d chunks", len(a), len(b))
	}
	for text, v := range a {
		if !slices.Equal(v, b[text]) {
			t.Errorf("chunk %.40q has another vector in the re-upload", text)
		}
	}
	// Another owner uploading the same text gets nothing from this one's.
	submitWait(t, e, "cus_b", "lease.txt", text)
	if got := em.take(); got != first.Chunks {
		t.Errorf("another owner's upload embedded %d texts, want all %d", got, first.Chunks)
	}

	// The job ran to its commit and "crashed" before recording the outcome.
	e.Shutdown(context.Background())
	if err := st.RetryJob(first.ID, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	e2 := startEngine(t, st, dir, em)
	if j := waitJob(t, e2, first.ID); j.Status != store.StatusSucceeded || j.Attempts != 2 {
		t.Fatalf("re-run: %+v", j)
	}
	if got := em.take(); got != 0 {
		t.Errorf("re-running a job whose chunks were written embedded %d texts, want 0", got)
	}
	res, _, err := searcher(e2).Search(context.Background(), "cus_a", "notice period of obligation", 5)
	if err != nil || len(res) == 0 {
		t.Fatalf("search after the re-run: %v, %v", res, err)
	}
}

// TestEmbedCacheSharedPage indexes two documents that begin with the same
// boilerplate: its chunks are embedded once. The text embedded holds the
// document's name (a chunk is embedded as "name\ntext"), so the sharing
// works between documents of one name (versions of a file, unnamed text
// uploads, all called "text") and not across names, where the vectors
// really differ.
func TestEmbedCacheSharedPage(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	em := newCounting()
	e := startEngine(t, st, dir, em)
	boiler := paragraphs("standard terms", 40)
	a := boiler + paragraphs("first order", 30)
	b := boiler + paragraphs("second order", 30)
	first := submitWait(t, e, "cus_a", "text", a)
	em.take()
	second := submitWait(t, e, "cus_a", "text", b)
	shared := 0
	av := docVectors(t, st, em.Model(), "cus_a", first.DocumentID)
	for text := range docVectors(t, st, em.Model(), "cus_a", second.DocumentID) {
		if _, ok := av[text]; ok {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("the documents share no chunk; the test text is wrong")
	}
	if got := em.take(); got != second.Chunks-shared {
		t.Errorf("the second document embedded %d texts; want %d (%d chunks, %d shared)", got, second.Chunks-shared, second.Chunks, shared)
	}
	third := submitWait(t, e, "cus_a", "other-name", b)
	if got := em.take(); got != third.Chunks {
		t.Errorf("a document of another name embedded %d texts, want all %d", got, third.Chunks)
	}
	// A text twice in one call is embedded once, and each gets its own copy.
	vecs, err := e.embedCached(context.Background(), "cus_a", em, []string{"north wing", "south wing", "north wing"})
	if err != nil {
		t.Fatal(err)
	}
	if got := em.take(); got != 2 {
		t.Errorf("three texts, two distinct: embedded %d", got)
	}
	if !slices.Equal(vecs[0], vecs[2]) || &vecs[0][0] == &vecs[2][0] {
		t.Error("a repeated text did not get an equal, separate vector")
	}
}

// TestEmbedCacheForgetsDeletedDocuments deletes documents: the cache's
// entries go with their chunks, a text still held by another document
// stays cached, and one no document holds any more is embedded again.
func TestEmbedCacheForgetsDeletedDocuments(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	em := newCounting()
	e := startEngine(t, st, dir, em)
	text := paragraphs("warranty", 50)
	first := submitWait(t, e, "cus_a", "w.txt", text)
	second := submitWait(t, e, "cus_a", "w.txt", text)
	em.take()
	entries := func() int {
		n, err := st.EmbedCacheEntries("cus_a")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := entries(); n != first.Chunks+second.Chunks {
		t.Fatalf("%d cache entries for %d chunks", n, first.Chunks+second.Chunks)
	}
	deleteDoc := func(id string) {
		t.Helper()
		d, err := st.Document(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.DeleteDocument(d); err != nil {
			t.Fatal(err)
		}
	}
	deleteDoc(first.DocumentID)
	if n := entries(); n != second.Chunks {
		t.Errorf("after deleting one document: %d entries, want %d", n, second.Chunks)
	}
	submitWait(t, e, "cus_a", "w.txt", text)
	if got := em.take(); got != 0 {
		t.Errorf("a text another document still holds was embedded again (%d texts)", got)
	}
	docs, _, _ := st.Documents("cus_a", "", 1000)
	for _, d := range docs {
		deleteDoc(d.ID)
	}
	if n := entries(); n != 0 {
		t.Errorf("every document deleted, %d cache entries left", n)
	}
	submitWait(t, e, "cus_a", "w.txt", text)
	if got := em.take(); got != first.Chunks {
		t.Errorf("after every copy was deleted the text embedded %d texts, want all %d", got, first.Chunks)
	}
}

// inProcess is an embedder that says it embeds in this process, as the
// built-in one does.
type inProcess struct{ renamed }

func (inProcess) InProcess() bool { return true }

// TestReindexResumes interrupts a reindex after its first step has staged
// vectors, as a crash would: the next reindex embeds only what the first
// did not, whether the owner's chunks were embedded by a model server (and
// are in the embedding cache) or in process (and are not: the built-in
// embedder is faster than the cache).
func TestReindexResumes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old       llm.Embedder
		inProcess bool
	}{
		{"model server", renamed{llm.NewBuiltin(), "old-model"}, false},
		{"in process", inProcess{renamed{llm.NewBuiltin(), "old-model"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testReindexResumes(t, tc.old, tc.inProcess) })
	}
}

func testReindexResumes(t *testing.T, old llm.Embedder, inProcess bool) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e1 := startEngine(t, st, dir, old)
	// More chunks than one reindex step.
	var jobs []*store.Job
	for i := 0; i < 3; i++ {
		jobs = append(jobs, submitWait(t, e1, "cus_a", fmt.Sprintf("book%d.txt", i), paragraphs(fmt.Sprintf("volume %d", i), 1600)))
	}
	total := 0
	for _, j := range jobs {
		total += j.Chunks
	}
	if total <= reindexBatch {
		t.Fatalf("%d chunks: the test needs more than one reindex step (%d)", total, reindexBatch)
	}
	cached := total
	if inProcess {
		cached = 0
	}
	if n, err := st.EmbedCacheEntries("cus_a"); err != nil || n != cached {
		t.Fatalf("%d embedding cache entries (%v), want %d", n, err, cached)
	}
	e1.Shutdown(context.Background())

	failing := &countingEmbedder{Embedder: llm.NewBuiltin(), failAfter: reindexBatch}
	e2 := startEngine(t, st, dir, failing)
	if _, err := e2.Reindex(context.Background(), "cus_a", nil); err == nil {
		t.Fatal("the reindex did not fail")
	}
	if om, _ := st.OwnerModel("cus_a"); om.Model != "old-model" {
		t.Fatalf("a failed reindex switched the owner to %s", om.Model)
	}
	e2.Shutdown(context.Background())

	em := newCounting()
	e3 := startEngine(t, st, dir, em)
	n, err := e3.Reindex(context.Background(), "cus_a", nil)
	if err != nil || n != total {
		t.Fatalf("Reindex = %d, %v; want %d chunks", n, err, total)
	}
	if got := em.take(); got != total-reindexBatch {
		t.Errorf("the second reindex embedded %d texts; want %d (%d chunks, %d staged by the first)", got, total-reindexBatch, total, reindexBatch)
	}
	res, warnings, err := searcher(e3).Search(context.Background(), "cus_a", "notice period of volume 2", 3)
	if err != nil || len(res) == 0 || len(warnings) != 0 {
		t.Fatalf("search after reindex = %v, %q, %v", res, warnings, err)
	}
}

// TestInProcessChunksSkipTheCache ingests with an in-process embedder: the
// chunks get no cache entries, and each its own text's vector (their
// texts have no hash to tell them apart by).
func TestInProcessChunksSkipTheCache(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	em := &countingInProcess{countingEmbedder{Embedder: llm.NewBuiltin()}}
	e := startEngine(t, st, dir, em)
	j := submitWait(t, e, "cus_a", "charter.txt", paragraphs("charter", 60))
	vecs := docVectors(t, st, em.Model(), "cus_a", j.DocumentID)
	if len(vecs) < 3 || len(vecs) != j.Chunks {
		t.Fatalf("%d distinct chunk texts of %d chunks: the test needs several", len(vecs), j.Chunks)
	}
	if got := em.take(); got != j.Chunks {
		t.Errorf("embedded %d texts for %d chunks", got, j.Chunks)
	}
	for text, v := range vecs {
		want, err := llm.NewBuiltin().Embed(context.Background(), []string{entryText("charter.txt", text)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v, want[0]) {
			t.Errorf("chunk %.40q has another text's vector", text)
		}
	}
	if n, err := st.EmbedCacheEntries("cus_a"); n != 0 || err != nil {
		t.Errorf("%d embedding cache entries (%v), want none", n, err)
	}
}

// countingInProcess is a countingEmbedder that embeds in process.
type countingInProcess struct{ countingEmbedder }

func (*countingInProcess) InProcess() bool { return true }
