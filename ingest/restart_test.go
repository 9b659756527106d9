package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// waitLimit bounds every wait on a job or the embedder.
const waitLimit = 30 * time.Second

// logBuffer collects an engine's logs across its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// node is one run of docsift's back end on a data dir: the store and a
// started engine.
type node struct {
	t      *testing.T
	dir    string
	store  *bolt.Store
	engine *ingest.Engine
	logs   *logBuffer
	closed bool
}

func startNode(t *testing.T, dir string, embedder llm.Embedder) *node {
	t.Helper()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	eng := ingest.New(st, embedder, filepath.Join(dir, "index"), ingest.Config{Workers: 1}, log)
	if err := eng.Start(); err != nil {
		st.Close()
		t.Fatalf("start engine: %v", err)
	}
	n := &node{t: t, dir: dir, store: st, engine: eng, logs: logs}
	t.Cleanup(func() {
		if !n.closed {
			n.stop(context.Background())
		}
		if t.Failed() {
			t.Logf("engine log:\n%s", logs.String())
		}
	})
	return n
}

// stop shuts the engine down with ctx and closes the store.
func (n *node) stop(ctx context.Context) {
	n.t.Helper()
	if err := n.engine.Shutdown(ctx); err != nil {
		n.t.Errorf("shutdown: %v", err)
	}
	if err := n.store.Close(); err != nil {
		n.t.Errorf("close store: %v", err)
	}
	n.closed = true
}

func (n *node) submit(owner, projectID, name, text string) *store.Job {
	n.t.Helper()
	job, _, err := n.engine.Submit(ingest.Upload{ProjectID: projectID, OwnerID: owner, Name: name, Data: []byte(text)})
	if err != nil {
		n.t.Fatalf("submit %s: %v", name, err)
	}
	return job
}

func (n *node) waitJob(jobID string) *store.Job {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	j, err := n.engine.WaitJob(ctx, jobID)
	if err != nil {
		n.t.Fatalf("wait for job %s: %v", jobID, err)
	}
	return j
}

func (n *node) search(owner, query string) []search.Result {
	n.t.Helper()
	res, _, err := search.New(n.engine, n.store, llm.NewExtractive(), nil, slog.New(slog.DiscardHandler)).Search(context.Background(), owner, query, 50)
	if err != nil {
		n.t.Fatalf("search %q: %v", query, err)
	}
	return res
}

func (n *node) ownerSeqs(owner string) []uint64 {
	n.t.Helper()
	seqs, err := n.store.OwnerSeqs(owner)
	if err != nil {
		n.t.Fatalf("owner seqs: %v", err)
	}
	return seqs
}

// newProject creates a project in a fresh data dir and returns the dir and
// the project id, which is also the owner of the test's documents.
func newProject(t *testing.T) (dir, projectID string) {
	t.Helper()
	dir = t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := st.CreateProject("restart")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, p.ID
}

// blockingEmbedder holds every Embed call until release is closed or the
// call's context ends; entered receives once per call.
type blockingEmbedder struct {
	llm.Embedder
	entered chan struct{}
	release chan struct{}
}

func newBlockingEmbedder() *blockingEmbedder {
	return &blockingEmbedder{Embedder: llm.NewBuiltin(), entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blockingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
		return b.Embedder.Embed(ctx, texts)
	case <-ctx.Done():
		return nil, fmt.Errorf("blocking embedder: %w", ctx.Err())
	}
}

// longText is a document of several chunks; the sentence about the
// heliotrope valve is in the middle.
func longText() string {
	var b strings.Builder
	for i := range 80 {
		fmt.Fprintf(&b, "Section %d of the maintenance manual describes routine checks of pump number %d and the weekly log. ", i+1, i%7)
		if i == 40 {
			b.WriteString("The heliotrope valve must be greased every ninety days with lithium grease. ")
		}
	}
	return b.String()
}

// expectedChunks is how many chunks text makes, computed the way the
// pipeline does but without it.
func expectedChunks(t *testing.T, text string) int {
	t.Helper()
	doc, err := pdf.Extract(context.Background(), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	n := len(ingest.ChunkPages(doc.Pages))
	if n < 2 {
		t.Fatalf("the test text makes %d chunk(s); it must make several", n)
	}
	return n
}

// wantFound requires a search hit holding phrase from document docID, and
// no chunk twice.
func wantFound(t *testing.T, results []search.Result, docID, phrase string) {
	t.Helper()
	seen := map[string]bool{}
	found := false
	for _, r := range results {
		if seen[r.Chunk.ID] {
			t.Errorf("chunk %s returned twice", r.Chunk.ID)
		}
		seen[r.Chunk.ID] = true
		found = found || (r.Chunk.DocumentID == docID && strings.Contains(r.Chunk.Text, phrase))
	}
	if !found {
		t.Errorf("no result of %s holds %q (%d results)", docID, phrase, len(results))
	}
}

// wantSnapshotMatchesStore reads the owner's snapshot and requires it to
// hold exactly the chunks the store has.
func wantSnapshotMatchesStore(t *testing.T, dir, owner string, seqs []uint64) {
	t.Helper()
	x, _, err := index.ReadSnapshot(filepath.Join(dir, "index", owner+".idx"))
	if err != nil {
		t.Fatalf("snapshot after restart: %v", err)
	}
	ids := x.IDs()
	slices.Sort(ids)
	if !slices.Equal(ids, seqs) {
		t.Errorf("snapshot holds chunks %v, the store %v", ids, seqs)
	}
}

// countLines counts log lines with msg about job id.
func countLines(logs, msg, jobID string) int {
	re := regexp.MustCompile(`msg="` + regexp.QuoteMeta(msg) + `" job=` + regexp.QuoteMeta(jobID) + `\b`)
	return len(re.FindAllString(logs, -1))
}

// TestRestartMidJob stops the engine while a job is inside the embedder,
// with no grace, then starts a new engine on the same data dir: the job
// runs again and succeeds once, with each chunk stored once.
func TestRestartMidJob(t *testing.T) {
	t.Parallel()
	dir, owner := newProject(t)
	text := longText()
	want := expectedChunks(t, text)

	blocker := newBlockingEmbedder()
	first := startNode(t, dir, blocker)
	job := first.submit(owner, owner, "manual.txt", text)
	select {
	case <-blocker.entered:
	case <-time.After(waitLimit):
		t.Fatal("the job never reached the embedder")
	}
	if j, err := first.store.Job(job.ID); err != nil || j.Status != store.StatusProcessing {
		t.Fatalf("job in the embedder: %+v, %v; want PROCESSING", j, err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := first.engine.Shutdown(cancelled); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if j, err := first.store.Job(job.ID); err != nil || j.Status != store.StatusPending || j.Attempts != 1 {
		t.Fatalf("job after a shutdown without grace: %+v, %v; want PENDING after 1 attempt", j, err)
	}
	// The interrupted run wrote the chunks before their vectors, so that
	// they were searchable by their words meanwhile; none got a vector.
	if seqs := first.ownerSeqs(owner); len(seqs) != want {
		t.Fatalf("the interrupted run stored %d chunks, want %d written before their vectors", len(seqs), want)
	}
	if missing, err := first.store.MissingVectors(owner, llm.NewBuiltin().Model()); err != nil || len(missing) != want {
		t.Fatalf("the interrupted run left %d chunks without vectors (%v), want %d", len(missing), err, want)
	}
	if err := first.store.Close(); err != nil {
		t.Fatal(err)
	}
	first.closed = true
	firstLogs := first.logs.String()

	second := startNode(t, dir, llm.NewBuiltin())
	j := second.waitJob(job.ID)
	if j.Status != store.StatusSucceeded || j.Chunks != want || j.Attempts != 2 {
		t.Errorf("job after restart: status %s, %d chunks, %d attempts; want SUCCEEDED, %d chunks, 2 attempts (error %q)", j.Status, j.Chunks, j.Attempts, want, j.Error)
	}
	seqs := second.ownerSeqs(owner)
	if len(seqs) != want {
		t.Errorf("the store holds %d chunks of the owner, want %d", len(seqs), want)
	}
	wantFound(t, second.search(owner, "how often must the heliotrope valve be greased?"), job.DocumentID, "heliotrope valve")
	second.stop(context.Background())

	logs := firstLogs + second.logs.String()
	if n := countLines(logs, "job succeeded", job.ID); n != 1 {
		t.Errorf("the job succeeded %d times across both runs, want once", n)
	}
	wantSnapshotMatchesStore(t, dir, owner, seqs)
}

// TestRestartAfterCrashDoesNotDuplicate leaves a job PROCESSING with its
// chunks already written, as a crash between writing the chunks and
// recording the outcome would, and checks that the re-run replaces the
// chunks instead of adding copies, in the store and in the index.
func TestRestartAfterCrashDoesNotDuplicate(t *testing.T) {
	t.Parallel()
	dir, owner := newProject(t)
	text := longText()
	want := expectedChunks(t, text)

	first := startNode(t, dir, llm.NewBuiltin())
	job := first.submit(owner, owner, "manual.txt", text)
	if j := first.waitJob(job.ID); j.Status != store.StatusSucceeded {
		t.Fatalf("first run: %+v", j)
	}
	before := first.ownerSeqs(owner)
	if err := first.engine.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The engine is stopped; claim the job again by hand and "crash".
	if err := first.store.RetryJob(job.ID, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	if j, _, err := first.store.ClaimJob(nil); err != nil || j.ID != job.ID {
		t.Fatalf("claim: %v %v", j, err)
	}
	if err := first.store.Close(); err != nil {
		t.Fatal(err)
	}
	first.closed = true

	second := startNode(t, dir, llm.NewBuiltin())
	j := second.waitJob(job.ID)
	if j.Status != store.StatusSucceeded || j.Chunks != want {
		t.Fatalf("re-run: %+v, want SUCCEEDED with %d chunks", j, want)
	}
	after := second.ownerSeqs(owner)
	if len(after) != want {
		t.Errorf("after the re-run the store holds %d chunks, want %d", len(after), want)
	}
	for _, s := range before {
		if slices.Contains(after, s) {
			t.Errorf("chunk sequence %d of the first run survived the re-run", s)
		}
	}
	results := second.search(owner, "heliotrope valve grease")
	wantFound(t, results, job.DocumentID, "heliotrope valve")
	texts := map[string]bool{}
	for _, r := range results {
		if texts[r.Chunk.Text] {
			t.Errorf("the same chunk text is returned twice: %.60q", r.Chunk.Text)
		}
		texts[r.Chunk.Text] = true
	}
	second.stop(context.Background())
	wantSnapshotMatchesStore(t, dir, owner, after)
}

// TestBadSnapshotIsRebuilt damages or removes an owner's snapshot between
// two runs: the next run rebuilds the index from the store and search works.
func TestBadSnapshotIsRebuilt(t *testing.T) {
	t.Parallel()
	damage := []struct {
		name   string
		fn     func(t *testing.T, path string)
		warned bool // the load logs that the snapshot was unusable
	}{
		{"bytes flipped", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(b) / 3; i < len(b)/3+16 && i < len(b); i++ {
				b[i] ^= 0xff
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 9); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			dir, owner := newProject(t)
			first := startNode(t, dir, llm.NewBuiltin())
			job := first.submit(owner, owner, "manual.txt", longText())
			if j := first.waitJob(job.ID); j.Status != store.StatusSucceeded {
				t.Fatalf("first run: %+v", j)
			}
			first.stop(context.Background())
			path := filepath.Join(dir, "index", owner+".idx")
			if _, _, err := index.ReadSnapshot(path); err != nil {
				t.Fatalf("no good snapshot after a clean shutdown: %v", err)
			}
			d.fn(t, path)

			second := startNode(t, dir, llm.NewBuiltin())
			wantFound(t, second.search(owner, "heliotrope valve grease"), job.DocumentID, "heliotrope valve")
			if got := strings.Contains(second.logs.String(), "snapshot unusable"); got != d.warned {
				t.Errorf("logged an unusable snapshot: %v, want %v", got, d.warned)
			}
			seqs := second.ownerSeqs(owner)
			second.stop(context.Background())
			wantSnapshotMatchesStore(t, dir, owner, seqs)
		})
	}
}

// TestDeleteWhileDown deletes a document with no server running: the next
// run's index drops it although the snapshot still has it.
func TestDeleteWhileDown(t *testing.T) {
	t.Parallel()
	dir, owner := newProject(t)
	first := startNode(t, dir, llm.NewBuiltin())
	gone := first.submit(owner, owner, "manual.txt", longText())
	kept := first.submit(owner, owner, "bakery.txt", "The bakery on Mill Street sells sourdough rye on Saturdays. The oven is lit at four.")
	for _, j := range []*store.Job{gone, kept} {
		if j := first.waitJob(j.ID); j.Status != store.StatusSucceeded {
			t.Fatalf("first run: %+v", j)
		}
	}
	first.stop(context.Background())

	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteDocument(gone.DocumentID); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	second := startNode(t, dir, llm.NewBuiltin())
	for _, r := range second.search(owner, "heliotrope valve grease pump maintenance manual") {
		if r.Chunk.DocumentID == gone.DocumentID {
			t.Errorf("the deleted document is still found: %s", r.Chunk.ID)
		}
	}
	wantFound(t, second.search(owner, "sourdough rye bakery"), kept.DocumentID, "sourdough")
	seqs := second.ownerSeqs(owner)
	second.stop(context.Background())
	wantSnapshotMatchesStore(t, dir, owner, seqs)
}
