package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// embedGate stands between docsift and the Ollama stand-in. It forwards
// everything, counting the texts of the /api/embed requests it forwards,
// and holds embed requests once told to: the test then knows where the
// pipeline is, without guessing at times.
type embedGate struct {
	*httptest.Server
	held chan struct{} // receives when a request starts waiting

	mu      sync.Mutex
	left    int           // embed requests to forward before holding; <0: all
	release chan struct{} // closed by open
	texts   int           // inputs forwarded since the last take
}

func newEmbedGate(t *testing.T, target string) *embedGate {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &embedGate{held: make(chan struct{}, 1), left: -1, release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(u)
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/embed" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if !g.pass(r, inputs(body)) {
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

// pass waits until the gate lets r through, and reports whether it did
// (false: the client gave up).
func (g *embedGate) pass(r *http.Request, n int) bool {
	for {
		g.mu.Lock()
		if g.left != 0 {
			if g.left > 0 {
				g.left--
			}
			g.texts += n
			g.mu.Unlock()
			return true
		}
		release := g.release
		g.mu.Unlock()
		select {
		case g.held <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return false
		}
	}
}

// holdAfter lets n more embed requests through and holds the ones after.
func (g *embedGate) holdAfter(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.left = n
	select { // a signal from an earlier hold is stale
	case <-g.held:
	default:
	}
}

// open lets every request through, held ones included.
func (g *embedGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.left = -1
	close(g.release)
	g.release = make(chan struct{})
}

// take returns how many texts were forwarded since the last take.
func (g *embedGate) take() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.texts
	g.texts = 0
	return n
}

// waitHeld waits until an embed request is being held.
func (g *embedGate) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-g.held:
	case <-time.After(30 * time.Second):
		t.Fatal("no embed request reached the gate")
	}
}

// inputs counts the texts of an /api/embed request body.
func inputs(body []byte) int {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	var many []string
	if json.Unmarshal(req.Input, &many) == nil {
		return len(many)
	}
	return 1
}

// gatedNode is a store and a started engine on dir, embedding through gate.
type gatedNode struct {
	store  *bolt.Store
	engine *Engine
	search *search.Service
}

func startGatedNode(t *testing.T, dir string, gate *embedGate) *gatedNode {
	t.Helper()
	return startGatedNodeWith(t, dir, gate, testEmbedModel)
}

// startGatedNodeWith is startGatedNode with the embedding model model.
func startGatedNodeWith(t *testing.T, dir string, gate *embedGate, model string) *gatedNode {
	t.Helper()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Held requests must outlast the test's look at them: the client's
	// own time limit is not what is tested.
	em, err := ollama.NewEmbedder(ollama.Config{URL: gate.URL, EmbedModel: model, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := New(st, em, filepath.Join(dir, "index"), Config{Workers: 1, EmbedBatch: 2}, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	n := &gatedNode{store: st, engine: e, search: searcher(e)}
	n.search.SetQueryEmbedTimeout(300 * time.Millisecond)
	t.Cleanup(func() { n.stop(context.Background()) })
	return n
}

// stop shuts the engine down, cancelling what runs when ctx is done, and
// closes the store; stopping twice is harmless.
func (n *gatedNode) stop(ctx context.Context) {
	if n.engine == nil {
		return
	}
	n.engine.Shutdown(ctx)
	n.store.Close()
	n.engine = nil
}

// manual is a text of several chunks, each with words of its own; one
// sentence, in the middle, is about a heliotrope valve.
func manual() string {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "Part %d covers the checks of pump%d, gauge%d and the log of shift%d in the plant. ", i+1, i, i, i)
		fmt.Fprintf(&b, "Inspectors record pressure%d and flow%d before the weekly review meeting. ", i, i)
		if i == 30 {
			b.WriteString("The heliotrope valve must be greased every ninety days with lithium grease. ")
		}
	}
	return b.String()
}

func submitText(t *testing.T, e *Engine, owner, name, text string) *store.Job {
	t.Helper()
	job, _, err := e.Submit(Upload{ProjectID: owner, OwnerID: owner, Name: name, Data: []byte(text)})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// foundIn reports whether results hold a chunk of document doc that
// contains words.
func foundIn(results []search.Result, doc, words string) bool {
	for _, r := range results {
		if r.Chunk.DocumentID == doc && strings.Contains(r.Chunk.Text, words) {
			return true
		}
	}
	return false
}

func hasWarning(warnings []string, part string) bool {
	for _, w := range warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

// bestVectorHit is the best hit of a vector-only search of the owner's
// index for text's stand-in embedding, with its chunk's text: score 0 when
// no chunk has a vector that shares a word with it.
func bestVectorHit(t *testing.T, e *Engine, owner, text string) (float64, string) {
	t.Helper()
	x, err := e.indexes.Get(owner)
	if err != nil {
		t.Fatal(err)
	}
	hits := x.Search(index.Query{Vector: ollamatest.Embedding(text, x.Dim()), K: 3})
	if len(hits) == 0 {
		return 0, ""
	}
	chunks, err := e.store.ChunksBySeq([]uint64{hits[0].ID})
	if err != nil || len(chunks) != 1 {
		t.Fatalf("chunk of hit %d: %v, %v", hits[0].ID, chunks, err)
	}
	return hits[0].Score, chunks[0].Text
}

// TestSearchableWhileEmbeddingHeld holds the model server's embeddings
// while a document is indexed: its chunks are found by their words at
// once, with a warning saying how many wait for their vector, and a query
// whose own embedding is held answers lexically within its bound instead
// of waiting. Once released, the job succeeds and queries are by meaning
// too, without warnings.
func TestSearchableWhileEmbeddingHeld(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	gate := newEmbedGate(t, ol.URL)
	n := startGatedNode(t, t.TempDir(), gate)
	const owner = "prj_held"

	gate.holdAfter(0)
	job := submitText(t, n.engine, owner, "manual.txt", manual())
	gate.waitHeld(t)

	j, err := n.store.Job(job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.StatusProcessing || j.Chunks < 3 || j.ChunksEmbedded != 0 {
		t.Fatalf("job while its embeddings are held: %s, %d chunks, %d embedded; want PROCESSING, several chunks, none embedded", j.Status, j.Chunks, j.ChunksEmbedded)
	}
	if got := n.engine.Indexes().Waiting(owner); got != j.Chunks {
		t.Errorf("Waiting = %d, want every chunk (%d)", got, j.Chunks)
	}

	// (The query's own embedding is held too: it must not wait for it.)
	start := time.Now()
	res, warnings, err := n.search.Search(context.Background(), owner, "heliotrope valve grease", 3)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !foundIn(res, job.DocumentID, "heliotrope valve") {
		t.Errorf("a lexical query did not find the document while its embeddings were held: %+v", res)
	}
	if want := fmt.Sprintf("%d chunks are still being embedded; they are found by their words only", j.Chunks); !hasWarning(warnings, want) {
		t.Errorf("warnings %q lack %q", warnings, want)
	}
	if !hasWarning(warnings, "was busy") {
		t.Errorf("warnings %q do not say the embedding model was busy", warnings)
	}
	if took > 10*time.Second { // the bound is 300 ms; the client's own limit a minute
		t.Errorf("a query with its embedding held took %v: it waited for the model", took)
	}
	if s, _ := bestVectorHit(t, n.engine, owner, "heliotrope valve greased lithium grease"); s > 0 {
		t.Errorf("a vector search scored %v before any vector existed", s)
	}

	gate.open()
	j = waitStatus(t, n.engine, job.ID, store.StatusSucceeded)
	if j.ChunksEmbedded != j.Chunks {
		t.Errorf("SUCCEEDED job: %d of %d chunks embedded", j.ChunksEmbedded, j.Chunks)
	}
	if got := n.engine.Indexes().Waiting(owner); got != 0 {
		t.Errorf("Waiting after the job succeeded = %d, want 0", got)
	}
	res, warnings, err = n.search.Search(context.Background(), owner, "heliotrope valve grease", 3)
	if err != nil || len(warnings) != 0 || !foundIn(res, job.DocumentID, "heliotrope valve") {
		t.Errorf("query once embedded: %+v, warnings %q, %v; want the chunk and no warning", res, warnings, err)
	}
	if s, text := bestVectorHit(t, n.engine, owner, "heliotrope valve greased lithium grease"); s <= 0 || !strings.Contains(text, "heliotrope valve") {
		t.Errorf("vector search after embedding: best hit scores %v, text %.60q…; want the heliotrope chunk: the vectors did not reach the index", s, text)
	}
}

// TestRestartMidEmbeddingReembedsOnlyMissing stops the engine after some
// batches of a document were embedded and starts another on the same data
// dir: the chunks stay searchable by their words throughout, and the rerun
// embeds only the chunks that had no vector.
func TestRestartMidEmbeddingReembedsOnlyMissing(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	gate := newEmbedGate(t, ol.URL)
	dir := t.TempDir()
	first := startGatedNode(t, dir, gate)
	const owner = "prj_restart"
	gate.take()

	gate.holdAfter(2)
	job := submitText(t, first.engine, owner, "manual.txt", manual())
	gate.waitHeld(t)
	j, err := first.store.Job(job.ID)
	if err != nil {
		t.Fatal(err)
	}
	chunks, embedded := j.Chunks, j.ChunksEmbedded
	if embedded == 0 || embedded >= chunks {
		t.Fatalf("held after two requests: %d of %d chunks embedded; want some but not all", embedded, chunks)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	first.stop(cancelled) // no grace: the held batch is lost

	gate.holdAfter(1)                      // the start-up check's probe
	second := startGatedNode(t, dir, gate) // the rerun waits at the gate
	gate.take()
	gate.open()
	j = waitStatus(t, second.engine, job.ID, store.StatusSucceeded)
	if j.Chunks != chunks || j.ChunksEmbedded != chunks {
		t.Errorf("job after the restart: %d chunks, %d embedded; want %d and %d", j.Chunks, j.ChunksEmbedded, chunks, chunks)
	}
	if got, want := gate.take(), chunks-embedded; got != want {
		t.Errorf("the rerun embedded %d texts, want the %d without a vector", got, want)
	}
	seqs, err := second.store.OwnerSeqs(owner)
	if err != nil || len(seqs) != chunks {
		t.Errorf("the store holds %d chunks (%v), want %d", len(seqs), err, chunks)
	}
	res, warnings, err := second.search.Search(context.Background(), owner, "heliotrope valve grease", 3)
	if err != nil || len(warnings) != 0 || !foundIn(res, job.DocumentID, "heliotrope valve") {
		t.Errorf("query after the rerun: %+v, warnings %q, %v", res, warnings, err)
	}
}

// TestRestartWhileWaitingKeepsLexical restarts with chunks written before
// their vectors: the new engine's index finds them by their words and
// counts them as waiting, before the rerun has embedded anything.
func TestRestartWhileWaitingKeepsLexical(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	gate := newEmbedGate(t, ol.URL)
	dir := t.TempDir()
	first := startGatedNode(t, dir, gate)
	const owner = "prj_wait"
	gate.holdAfter(0)
	job := submitText(t, first.engine, owner, "manual.txt", manual())
	gate.waitHeld(t)
	j, _ := first.store.Job(job.ID)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	first.stop(cancelled)

	// The start-up check's probe passes the gate; the rerun's first batch
	// is held.
	gate.holdAfter(1)
	second := startGatedNode(t, dir, gate)
	gate.waitHeld(t)
	if got := second.engine.Indexes().Waiting(owner); got != j.Chunks {
		t.Errorf("after the restart, Waiting = %d, want %d", got, j.Chunks)
	}
	res, warnings, err := second.search.Search(context.Background(), owner, "heliotrope valve grease", 3)
	if err != nil || !foundIn(res, job.DocumentID, "heliotrope valve") || !hasWarning(warnings, "still being embedded") {
		t.Errorf("query after the restart: %+v, warnings %q, %v", res, warnings, err)
	}
	gate.open()
	waitStatus(t, second.engine, job.ID, store.StatusSucceeded)
}

// TestDeleteMidEmbeddingRemovesLexical deletes a document while its
// embeddings are held: its chunks leave the index at once, and the job
// ends FAILED saying why.
func TestDeleteMidEmbeddingRemovesLexical(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	gate := newEmbedGate(t, ol.URL)
	n := startGatedNode(t, t.TempDir(), gate)
	const owner = "prj_delete"
	gate.holdAfter(0)
	job := submitText(t, n.engine, owner, "manual.txt", manual())
	gate.waitHeld(t)
	doc, err := n.store.Document(job.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.engine.DeleteDocument(doc); err != nil {
		t.Fatal(err)
	}
	res, warnings, err := n.search.Search(context.Background(), owner, "heliotrope valve grease", 3)
	if err != nil || len(res) != 0 || hasWarning(warnings, "still being embedded") {
		t.Errorf("query after deleting the document: %+v, warnings %q, %v; want nothing", res, warnings, err)
	}
	gate.open()
	j := waitStatus(t, n.engine, job.ID, store.StatusFailed)
	if !strings.Contains(j.Error, "deleted") {
		t.Errorf("job of the deleted document: %+v", j)
	}
}

// TestFailedJobRemovesLexical: a job that fails for good while its chunks
// wait for vectors takes them out of the store and the index.
func TestFailedJobRemovesLexical(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 64})
	gate := newEmbedGate(t, ol.URL)
	n := startGatedNode(t, t.TempDir(), gate)
	const owner = "prj_fail"
	gate.holdAfter(0)
	job := submitText(t, n.engine, owner, "manual.txt", manual())
	gate.waitHeld(t)
	ol.RemoveModel(testEmbedModel) // a permanent failure: the model is gone
	gate.open()
	j := waitStatus(t, n.engine, job.ID, store.StatusFailed)
	if j.Chunks != 0 || j.ChunksEmbedded != 0 {
		t.Errorf("FAILED job shows %d chunks, %d embedded", j.Chunks, j.ChunksEmbedded)
	}
	if seqs, err := n.store.OwnerSeqs(owner); err != nil || len(seqs) != 0 {
		t.Errorf("a FAILED job left %d chunks (%v)", len(seqs), err)
	}
	res, warnings, err := n.search.Search(context.Background(), owner, "heliotrope valve grease", 3)
	if err != nil || len(res) != 0 || hasWarning(warnings, "still being embedded") {
		t.Errorf("query after the job failed: %+v, warnings %q, %v; want nothing", res, warnings, err)
	}
}
