// Package llm holds the models docsift talks to: embedders that turn text into
// vectors and answerers that write an answer grounded in retrieved chunks.
//
// Two families implement the interfaces: the built-in ones here
// (deterministic, no model files, always available) and a model server's
// (Ollama's, in llm/ollama). Callers depend only on the interfaces and on
// the errors of errors.go, so the choice is made once, at start-up
// (choose.go), and only the wiring knows which server is behind them.
package llm

import (
	"context"

	"github.com/docsift/docsift/analysis"
)

// Embedder turns texts into unit-length vectors of a fixed dimension.
//
// Model names the embedding space. Vectors of different models never mix in
// one index, so the name is recorded with every index built from it.
type Embedder interface {
	Model() string
	Dim() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// QueryEmbedder is an Embedder whose model embeds a search query differently
// from the passages it searches: asymmetric retrieval models are trained
// with a task prefix on each side, and score worse without it. Search embeds
// queries with EmbedQuery when the embedder has it; Embed is for passages.
type QueryEmbedder interface {
	Embedder
	EmbedQuery(ctx context.Context, query string) ([]float32, error)
}

// Source is one retrieved chunk handed to an answerer, numbered by its
// position in the slice: sources[0] is cited as [1].
type Source struct {
	Title string // document name
	Page  int    // 1-based page, 0 when the document has no pages
	Text  string
	// Lang is the language Text was analysed in when it was indexed; Neutral
	// when it is not known (or the text is in none of analysis's
	// languages), and then detected where it matters.
	Lang analysis.Lang
}

// Answerer writes an answer to query from sources only, citing them as [n].
//
// When onDelta is non-nil it receives the answer as it is produced (one call
// per piece); the returned string is always the whole answer. An answer the
// model stopped at its length limit comes with a *TruncatedAnswerError: a warning
// for the reader, with the answer intact, not a failure.
type Answerer interface {
	Model() string
	Answer(ctx context.Context, query string, sources []Source, onDelta func(string)) (string, error)
}
