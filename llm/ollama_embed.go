package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
	batch  batchSizer // texts per request: see ollama_batch.go
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
	return &OllamaEmbedder{client: c, model: cfg.EmbedModel, batch: batchSizer{max: cfg.BatchSize}, task: prefixesFor(cfg.EmbedModel)}, nil
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
	for start := 0; start < len(texts); {
		batch := texts[start:min(start+e.batch.next(), len(texts))]
		start += len(batch)
		began := time.Now()
		vecs, err := e.embedBatch(ctx, batch)
		if err == nil {
			e.batch.observe(len(batch), time.Since(began))
		}
		if overContext(err) {
			vecs, err = e.embedFitting(ctx, batch, err)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// minFitBytes is the shortest start of a text embedFitting tries before
// giving up: shorter than any context, so never reached by a model that
// can embed anything at all.
const minFitBytes = 64

// embedFitting embeds a batch the server refused as longer than the
// model's context: each text alone, and a text still refused from a
// shorter start of it, half as long each time, cut at a space.
//
// Ollama truncates an over-long input itself (docsift asks it to), but it
// does so by cutting the tokens and turning them back into text, and when
// the kept tokens hold unknown ones ("[UNK]", itself several tokens) that
// text is over the context again and the request fails with a 400. Code,
// symbols, emoji and scripts the model's vocabulary lacks do it (a real
// PDF of C documentation does with a 512-token model). Embedding a start of
// the chunk is what truncation meant to do; failing the document is not.
//
// Texts go one by one rather than by halves of the batch: where one text
// is refused its neighbours often are too (a page of code), and a refused
// request costs the server more than a small one that succeeds. refused is
// the server's refusal of batch as it is.
func (e *OllamaEmbedder) embedFitting(ctx context.Context, batch []string, refused error) ([][]float32, error) {
	out := make([][]float32, len(batch))
	for i, text := range batch {
		err := refused
		if len(batch) > 1 {
			var vecs [][]float32
			if vecs, err = e.embedBatch(ctx, []string{text}); err == nil {
				out[i] = vecs[0]
				continue
			}
		}
		for overContext(err) && len(text) > minFitBytes {
			text = shorterStart(text)
			var vecs [][]float32
			if vecs, err = e.embedBatch(ctx, []string{text}); err == nil {
				out[i] = vecs[0]
				break
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// shorterStart returns about the first half of text, ending before a space
// when there is one in the second quarter, else at a rune boundary.
func shorterStart(text string) string {
	half := len(text) / 2
	if i := strings.LastIndexAny(text[:half], " \n\t"); i > half/2 {
		return text[:i]
	}
	for half > 0 && !utf8.RuneStart(text[half]) {
		half--
	}
	return text[:half]
}

// overContext reports whether err is the server refusing an input as longer
// than the model's context.
func overContext(err error) bool {
	var se api.StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusBadRequest && strings.Contains(se.ErrorMessage, "exceeds the context length")
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
	if overContext(err) {
		vecs, err = e.embedFitting(ctx, []string{e.task.query + query}, err)
	}
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
