package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"
)

// dimensionProbe is the text embedded to learn a model's dimension.
const dimensionProbe = "docsift dimension probe"

// OllamaEmbedder embeds texts with an Ollama embedding model through
// /api/embed, in batches.
//
// Its dimension is a property of the model, learnt from the server: Check
// probes it, and otherwise the first successful Embed fixes it. Until then
// Dim returns 0, so callers that size an index from Dim call Check first (the
// start-up choice between Ollama and the built-in embedder does). Every later
// vector must have that dimension; one that does not is a *DimensionError,
// never a silently mixed index.
type OllamaEmbedder struct {
	client *OllamaClient
	model  string
	batch  int
	task   taskPrefixes

	mu  sync.Mutex
	dim int
}

// NewOllamaEmbedder returns an embedder using cfg.EmbedModel. It does no
// I/O; call Check to learn the dimension and whether the server and model
// are there.
func NewOllamaEmbedder(cfg OllamaConfig) (*OllamaEmbedder, error) {
	cfg = cfg.WithDefaults()
	c, err := NewOllamaClient(cfg)
	if err != nil {
		return nil, err
	}
	return &OllamaEmbedder{client: c, model: cfg.EmbedModel, batch: cfg.BatchSize, task: prefixesFor(cfg.EmbedModel)}, nil
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
}

func prefixesFor(model string) taskPrefixes {
	name, _, _ := strings.Cut(model, ":")
	return knownTaskPrefixes[name[strings.LastIndexByte(name, '/')+1:]]
}

// Model names the embedding space as "ollama:<model>".
func (e *OllamaEmbedder) Model() string { return "ollama:" + e.model }

// Dim is the vector dimension, 0 until Check or Embed has learnt it.
func (e *OllamaEmbedder) Dim() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dim
}

// ExpectDim tells the embedder the dimension an existing index was built
// with, so that vectors of any other dimension are refused from the first
// call, even when Ollama was down at start-up and nothing was probed. It
// fails when a different dimension is already known.
func (e *OllamaEmbedder) ExpectDim(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case n <= 0:
		return fmt.Errorf("llm: ollama embed: invalid dimension %d", n)
	case e.dim == 0:
		e.dim = n
	case e.dim != n:
		return fmt.Errorf("llm: ollama embed: %w", &DimensionError{Model: e.model, Want: n, Got: e.dim})
	}
	return nil
}

// Client is the connection the embedder uses, for health checks and pulls.
func (e *OllamaEmbedder) Client() *OllamaClient { return e.client }

// Check reports whether Ollama answers and has the model, and learns the
// dimension by embedding a probe text.
func (e *OllamaEmbedder) Check(ctx context.Context) error {
	if err := e.client.Check(ctx, e.model); err != nil {
		return err
	}
	_, err := e.Embed(ctx, []string{dimensionProbe})
	return err
}

// Embed returns one unit-length vector per text, in order. Each batch is one
// call with its own deadline; the first failing batch ends the call (the
// caller retries the whole set when IsTransient says so, and vectors are
// deterministic, so a retry is harmless).
func (e *OllamaEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.task.passage != "" {
		prefixed := make([]string, len(texts))
		for i, t := range texts {
			prefixed[i] = e.task.passage + t
		}
		texts = prefixed
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		batch := texts[start:min(start+e.batch, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *OllamaEmbedder) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.client.timeout)
	defer cancel()
	truncate := true // embed an overlong chunk's start rather than fail the job
	resp, err := e.client.api.Embed(ctx, &api.EmbedRequest{Model: e.model, Input: batch, Truncate: &truncate})
	if err != nil {
		return nil, e.client.wrap("embed", e.client.modelError(e.model, err))
	}
	if len(resp.Embeddings) != len(batch) {
		return nil, e.client.wrap("embed", fmt.Errorf("sent %d texts, got %d vectors", len(batch), len(resp.Embeddings)))
	}
	for i, v := range resp.Embeddings {
		if err := e.checkDim(len(v)); err != nil {
			return nil, e.client.wrap("embed", err)
		}
		if err := normalizeInPlace(v); err != nil {
			return nil, e.client.wrap("embed", fmt.Errorf("text %d: %w", i, err))
		}
	}
	return resp.Embeddings, nil
}

// EmbedQuery embeds a search query, with the model's query prefix.
func (e *OllamaEmbedder) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	vecs, err := e.embedBatch(ctx, []string{e.task.query + query})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// checkDim fixes the dimension on first use and holds every vector to it.
func (e *OllamaEmbedder) checkDim(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n == 0 {
		return &DimensionError{Model: e.model, Want: e.dim, Got: 0}
	}
	if e.dim == 0 {
		e.dim = n
	}
	if n != e.dim {
		return &DimensionError{Model: e.model, Want: e.dim, Got: n}
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
