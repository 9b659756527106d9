package ollama

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

// dimensionProbe is the text embedded to learn a model's dimension.
const dimensionProbe = "docsift dimension probe"

// Embedder embeds texts with an Ollama embedding model through
// /api/embed, on one server or spread over several.
//
// Queries go first. Ingest (Embed) keeps at most one batch in flight per
// server, each sized to take about half a second (batch.go), so a
// query (EmbedQuery), which skips that gate and goes to the least busy
// server, waits at most about one batch; a repeated query is answered from
// a small cache without asking the server.
//
// Inputs fit the model: a text longer than the model's context is split in
// parts that fit, each embedded, and the parts' vectors combined (see
// combine). The context comes from /api/show; token counts are estimated
// and the estimate corrected by the counts the server reports.
//
// Its dimension is a property of the model, learnt from the server: Check
// probes it, and otherwise the first successful Embed fixes it. Until then
// Dim returns 0, so callers that size an index from Dim call Check first (the
// start-up choice between Ollama and the built-in embedder does). Every later
// vector must have that dimension; one that does not is a *llm.DimensionError,
// never a silently mixed index.
type Embedder struct {
	clients []*Client
	model   string // as configured: sent to the server
	task    taskPrefixes
	queries *queryCache
	tokens  tokenEstimator

	mu       sync.Mutex
	key      string // the embedding space's name when set: see SetModelKey
	dim      int
	context  int    // tokens an input may hold; 0 until learnt
	digest   string // of the model, once learnt
	slots    []*ingestSlot
	released chan struct{} // closed and replaced when a slot is released
}

// ingestSlot is one server's place for an ingest batch: at most one batch
// is in flight on a server at a time.
type ingestSlot struct {
	client *Client
	batch  batchSizer // that server's speed decides its batches
	inUse  bool
}

// NewEmbedder returns an embedder using cfg.EmbedModel on the
// servers cfg.URL lists. It does no I/O; call Check to learn the dimension,
// the context and whether the servers and model are there.
func NewEmbedder(cfg Config) (*Embedder, error) {
	cfg = cfg.WithDefaults()
	cs, err := NewClients(cfg)
	if err != nil {
		return nil, err
	}
	e := &Embedder{
		clients:  cs,
		model:    cfg.EmbedModel,
		task:     prefixesFor(cfg.EmbedModel),
		queries:  newQueryCache(queryCacheSize),
		released: make(chan struct{}),
	}
	for _, c := range cs {
		e.slots = append(e.slots, &ingestSlot{client: c, batch: batchSizer{max: cfg.BatchSize}})
	}
	return e, nil
}

// taskPrefixes are what an asymmetric embedding model expects before a
// passage and before a query.
type taskPrefixes struct{ passage, query string }

// knownTaskPrefixes lists the prefixes of the common asymmetric models in
// Ollama's library, by model name without its tag, as their model cards give
// them. Models not listed embed text as it is.
var knownTaskPrefixes = map[string]taskPrefixes{
	"nomic-embed-text":       {passage: "search_document: ", query: "search_query: "},
	"mxbai-embed-large":      {query: "Represent this sentence for searching relevant passages: "},
	"snowflake-arctic-embed": {query: "Represent this sentence for searching relevant passages: "},
	"bge-small-en-v1.5":      {query: "Represent this sentence for searching relevant passages: "},
}

func prefixesFor(model string) taskPrefixes {
	name, _, _ := strings.Cut(CanonicalModelName(model), ":")
	return knownTaskPrefixes[name[strings.LastIndexByte(name, '/')+1:]]
}

// Model names the embedding space: the key SetModelKey set, else
// "ollama:<model>" with the model's name in its canonical spelling
// (CanonicalModelName), so that "tinyembed" and "tinyembed:latest" are one
// space.
func (e *Embedder) Model() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.key != "" {
		return e.key
	}
	return e.NameKey()
}

// NameKey is the embedding space's name by the model's name alone.
func (e *Embedder) NameKey() string { return "ollama:" + CanonicalModelName(e.model) }

// DigestKey is the embedding space's name by the model's name and digest,
// "ollama:<model>@<12 hex digits>", so that a model replaced under its name
// is another space; "" until Check learnt the digest.
func (e *Embedder) DigestKey() string {
	if d := e.Digest(); d != "" {
		return e.NameKey() + "@" + llm.ShortDigest(d)
	}
	return ""
}

// SetModelKey names the embedding space key (NameKey or DigestKey: the
// caller knows which one the existing indexes use). Call it before the
// embedder is handed to anything that records Model().
func (e *Embedder) SetModelKey(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.key = key
}

// Dim is the vector dimension, 0 until Check or Embed has learnt it.
func (e *Embedder) Dim() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dim
}

// Context is the most tokens one input may hold, 0 until Check learnt it.
func (e *Embedder) Context() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.context
}

// Digest is the model's digest on the servers, "" until Check learnt it.
func (e *Embedder) Digest() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.digest
}

// ExpectDim tells the embedder the dimension an existing index was built
// with, so that vectors of any other dimension are refused from the first
// call, even when Ollama was down at start-up and nothing was probed. It
// fails when a different dimension is already known.
func (e *Embedder) ExpectDim(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case n <= 0:
		return fmt.Errorf("llm: ollama embed: invalid dimension %d", n)
	case e.dim == 0:
		e.dim = n
	case e.dim != n:
		return fmt.Errorf("llm: ollama embed: %w", &llm.DimensionError{Model: e.model, Want: n, Got: e.dim})
	}
	return nil
}

// Client is the connection to the first server, for health checks, pulls
// and messages.
func (e *Embedder) Client() *Client { return e.clients[0] }

// Clients are the connections to every server.
func (e *Embedder) Clients() []*Client { return e.clients }

// Check reports whether Ollama answers and has the model on every server
// that answers, as an embedding model, under one digest; learns its context
// and, by embedding a probe text, its dimension. A model replaced under its
// name since the last Check is a *llm.ModelReplacedError.
func (e *Embedder) Check(ctx context.Context) error {
	f, err := checkModelOn(ctx, e.clients, e.model, "embedding")
	if err != nil {
		return err
	}
	e.mu.Lock()
	old := e.digest
	if old == "" || old == f.Digest {
		e.digest, e.context = f.Digest, f.Context
	}
	e.mu.Unlock()
	if old != "" && f.Digest != old {
		return &llm.ModelReplacedError{Model: e.model, Old: old, New: f.Digest}
	}
	_, err = e.embedQuery(ctx, dimensionProbe)
	return err
}

// Embed returns one unit-length vector per text, in order. Batches go to
// the servers that have no ingest batch in flight, one each; the first
// failing batch ends the call (the caller retries the whole set when
// llm.IsTransient says so, and vectors are deterministic, so a retry is
// harmless). A batch that fails because its server is down is tried on
// another one first.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	var parts []string
	var owner []int // per part: its text
	for i, t := range texts {
		for _, p := range e.fit(e.task.passage, t) {
			parts = append(parts, p)
			owner = append(owner, i)
		}
	}
	vecs, err := e.embedParts(ctx, parts)
	if err != nil {
		return nil, err
	}
	return joinParts(texts, parts, owner, vecs), nil
}

// fit returns text with prefix in parts that fit the model's context by
// the token estimate: text itself when it fits, as it does when the
// context is not known.
func (e *Embedder) fit(prefix, text string) []string {
	parts := []string{prefix + text}
	if ctx := e.Context(); ctx > 0 {
		budget := ctx - e.tokens.estimate(prefix) - embedMarginTokens
		if raw := splitToFit(text, budget, e.tokens.estimate); len(raw) > 1 {
			parts = parts[:0]
			for _, p := range raw {
				parts = append(parts, prefix+p)
			}
		}
	}
	return parts
}

// joinParts returns one vector per text from its parts' vectors.
func joinParts(texts, parts []string, owner []int, vecs [][]float32) [][]float32 {
	out := make([][]float32, len(texts))
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && owner[j] == owner[i] {
			j++
		}
		if j == i+1 {
			out[owner[i]] = vecs[i]
		} else {
			out[owner[i]] = combine(vecs[i:j], parts[i:j])
		}
		i = j
	}
	return out
}

// embedParts embeds texts that fit, batch by batch, over the servers'
// ingest slots.
func (e *Embedder) embedParts(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	fail := func(err error) { failOnce.Do(func() { failed = err; cancel(err) }) }
	for start := 0; start < len(texts) && ctx.Err() == nil; {
		slot, err := e.acquire(ctx)
		if err != nil {
			fail(err)
			break
		}
		lo, hi := start, min(start+slot.batch.next(), len(texts))
		start = hi
		wg.Add(1)
		go func() {
			defer wg.Done()
			vecs, err := e.embedOnSlot(ctx, slot, texts[lo:hi])
			if err != nil {
				fail(err)
				return
			}
			copy(out[lo:hi], vecs)
		}()
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// embedOnSlot embeds batch on slot's server and releases the slot; when
// the server is down and another is not, on another.
func (e *Embedder) embedOnSlot(ctx context.Context, slot *ingestSlot, batch []string) ([][]float32, error) {
	for tries := 1; ; tries++ {
		began := time.Now()
		vecs, err := e.embedFitting(ctx, slot.client, batch)
		e.release(slot)
		if err == nil {
			slot.batch.observe(len(batch), time.Since(began))
			return vecs, nil
		}
		if !endpointDown(err) || ctx.Err() != nil || tries >= len(e.slots) || !e.anotherUsable(slot.client) {
			return nil, err
		}
		if slot, err = e.acquire(ctx); err != nil {
			return nil, err
		}
	}
}

// acquire waits for a server with no ingest batch in flight. A server
// backing off is passed over while another is usable; when none is, the
// one due first is taken (its call fails fast or finds it back).
func (e *Embedder) acquire(ctx context.Context) (*ingestSlot, error) {
	for {
		e.mu.Lock()
		if slot := e.freeSlotLocked(); slot != nil {
			slot.inUse = true
			e.mu.Unlock()
			return slot, nil
		}
		wait := e.released
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-wait:
		}
	}
}

func (e *Embedder) freeSlotLocked() *ingestSlot {
	now := time.Now()
	var best, firstDue *ingestSlot
	var bestDue time.Time
	anyUsable := false
	for _, s := range e.slots {
		due := s.client.health.due(now)
		if due.IsZero() {
			anyUsable = true
			if !s.inUse && (best == nil || s.client.health.busy.Load() < best.client.health.busy.Load()) {
				best = s
			}
		} else if !s.inUse && (firstDue == nil || due.Before(bestDue)) {
			firstDue, bestDue = s, due
		}
	}
	if best != nil || anyUsable {
		return best
	}
	return firstDue
}

func (e *Embedder) release(slot *ingestSlot) {
	e.mu.Lock()
	defer e.mu.Unlock()
	slot.inUse = false
	close(e.released)
	e.released = make(chan struct{})
}

// anotherUsable reports whether a server other than c is not backing off.
func (e *Embedder) anotherUsable(c *Client) bool {
	now := time.Now()
	for _, o := range e.clients {
		if o != c && o.health.due(now).IsZero() {
			return true
		}
	}
	return false
}

// minSplitBytes is the shortest text embedFitting splits further; one the
// server still refuses is embedded truncated by the server, as a last
// resort (a run of symbols each of which is many tokens).
const minSplitBytes = 64

// embedFitting embeds batch on c. When the server refuses it as longer
// than the model's context (the estimate was short: a text of symbols or
// of a script the vocabulary lacks), each text goes alone, and one still
// refused is split in two halves, embedded and combined, recursively.
//
// Splitting rather than truncating keeps the whole text searchable: a
// truncated chunk cannot be found by what its end says. Texts go one by
// one rather than by halves of the batch: where one text is refused its
// neighbours often are too (a page of code), and a refused request costs
// the server more than a small one that succeeds.
func (e *Embedder) embedFitting(ctx context.Context, c *Client, batch []string) ([][]float32, error) {
	vecs, err := e.embedBatch(ctx, c, batch, false)
	if !overContext(err) {
		return vecs, err
	}
	out := make([][]float32, len(batch))
	for i, text := range batch {
		refused := err
		if len(batch) > 1 {
			refused = nil
		}
		if out[i], err = e.embedSplitting(ctx, c, text, refused); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// embedSplitting embeds one text, split in halves while the server refuses
// it as over the context; refused is the server's answer to text already
// sent, or nil.
func (e *Embedder) embedSplitting(ctx context.Context, c *Client, text string, refused error) ([]float32, error) {
	err := refused
	if err == nil {
		var vecs [][]float32
		if vecs, err = e.embedBatch(ctx, c, []string{text}, false); err == nil {
			return vecs[0], nil
		}
	}
	if !overContext(err) {
		return nil, err
	}
	if len(text) <= minSplitBytes {
		vecs, err := e.embedBatch(ctx, c, []string{text}, true)
		if err != nil {
			return nil, err
		}
		return vecs[0], nil
	}
	halves := splitHalves(text)
	var vecs [][]float32
	for _, h := range halves {
		v, err := e.embedSplitting(ctx, c, h, nil)
		if err != nil {
			return nil, err
		}
		vecs = append(vecs, v)
	}
	return combine(vecs, halves), nil
}

// overContext reports whether err is the server refusing an input as longer
// than the model's context.
func overContext(err error) bool {
	var se api.StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusBadRequest && strings.Contains(se.ErrorMessage, "exceeds the context length")
}

// embedBatch is one /api/embed call on c. Without truncate the server
// refuses an input over the context, which embedFitting then splits; the
// server's token count corrects the estimate.
func (e *Embedder) embedBatch(ctx context.Context, c *Client, batch []string, truncate bool) ([][]float32, error) {
	var resp *api.EmbedResponse
	err := callOn(c, func(c *Client) error {
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		req := &api.EmbedRequest{Model: e.model, Input: batch, Truncate: &truncate}
		if n := e.Context(); n > 0 {
			// The limit docsift fits inputs to is the one the server
			// applies, whatever its default num_ctx.
			req.Options = map[string]any{"num_ctx": n}
		}
		var err error
		if resp, err = c.api.Embed(ctx, req); err != nil {
			return c.wrap("embed", c.modelError(e.model, err))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Embeddings) != len(batch) {
		return nil, c.wrap("embed", fmt.Errorf("sent %d texts, got %d vectors", len(batch), len(resp.Embeddings)))
	}
	for i, v := range resp.Embeddings {
		if err := e.checkDim(len(v)); err != nil {
			return nil, c.wrap("embed", err)
		}
		if err := normalizeInPlace(v); err != nil {
			return nil, c.wrap("embed", fmt.Errorf("text %d: %w", i, err))
		}
	}
	if !truncate {
		e.tokens.observe(batch, resp.PromptEvalCount)
	}
	return resp.Embeddings, nil
}

// EmbedQuery embeds a search query, with the model's query prefix, on the
// least busy server, without waiting for ingest's slots. A query seen
// recently is answered from the cache.
func (e *Embedder) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	key := e.Model() + "\x00" + query
	if v, ok := e.queries.get(key); ok {
		return slices.Clone(v), nil
	}
	v, err := e.embedQuery(ctx, query)
	if err != nil {
		return nil, err
	}
	e.queries.put(key, slices.Clone(v))
	return v, nil
}

// embedQuery is EmbedQuery without the cache.
func (e *Embedder) embedQuery(ctx context.Context, query string) ([]float32, error) {
	parts := e.fit(e.task.query, query)
	var vecs [][]float32
	err := onEach(ctx, e.clients, func(c *Client) error {
		var err error
		vecs = make([][]float32, len(parts))
		for i, p := range parts {
			if vecs[i], err = e.embedSplitting(ctx, c, p, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(vecs) > 1 {
		return combine(vecs, parts), nil
	}
	return vecs[0], nil
}

// checkDim fixes the dimension on first use and holds every vector to it.
func (e *Embedder) checkDim(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n == 0 {
		return &llm.DimensionError{Model: e.model, Want: e.dim, Got: 0}
	}
	if e.dim == 0 {
		e.dim = n
	}
	if n != e.dim {
		return &llm.DimensionError{Model: e.model, Want: e.dim, Got: n}
	}
	return nil
}

// normalizeInPlace scales v to unit length. Ollama already normalizes
// /api/embed output, but the index's cosine-as-dot-product relies on it, so
// it is not left to the server. A zero vector stays zero (it matches
// nothing); a NaN or Inf is an error, as it would poison every score.
func normalizeInPlace(v []float32) error {
	var sum float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errNonFinite
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return nil
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return nil
}

var errNonFinite = errors.New("vector holds NaN or Inf")
