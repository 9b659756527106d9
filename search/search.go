// Package search is docsift's query use case: it retrieves an owner's best
// chunks (vector and lexical search fused in the owner's index), and writes
// an answer grounded in them with the configured answerer, falling back to
// an extractive answer when the model fails. Internet search answers the same
// way from web results. The server only translates HTTP to these calls.
package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/docsift/docsift/analysis"
	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/indexes"
	"github.com/docsift/docsift/internal/runtimepolicy"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/metrics"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/websearch"
)

// Engine gives search the owners' live indexes and the embedders their
// vectors came from; *ingest.Engine is one. Defined here, where it is
// used, so that search does not depend on the indexing pipeline.
type Engine interface {
	// Indexes returns the owners' live indexes.
	Indexes() *indexes.Set
	// Embedder returns the embedder of model, or an error saying what to
	// do when this server cannot run it.
	Embedder(model string) (llm.Embedder, error)
}

// DefaultQueryEmbedTimeout bounds how long a query waits for its vector.
// A model server on a CPU embeds one input at a time, so a query sent
// while documents are being embedded waits behind their batch (tens of
// seconds with a BERT-sized model); answering from the lexical index
// after two seconds, and saying so, beats hanging. An idle server embeds
// a query in well under that, and the built-in embedder in microseconds.
const DefaultQueryEmbedTimeout = 2 * time.Second

// WebSearcher finds pages on the web; *websearch.Searx is one.
type WebSearcher interface {
	Search(ctx context.Context, query string, n int) ([]websearch.Result, error)
}

// ErrWebNotConfigured is returned by Internet when no search instance is
// configured.
var ErrWebNotConfigured = errors.New("internet search is not configured: set --searxng-url")

// Store is what a query reads of the store: the chunks the indexes found
// and their documents' names.
type Store interface {
	ChunksBySeq(seqs []uint64) ([]store.Chunk, error)
	DocumentNames(chunks []store.Chunk) (map[string]string, error)
}

// Service runs queries.
type Service struct {
	indexes  *indexes.Set
	engine   Engine
	store    Store
	answerer llm.Answerer
	fallback llm.Answerer // answers when answerer fails
	web      WebSearcher  // nil: internet search is off
	log      *slog.Logger
	metrics  *metrics.Metrics
	// embedTimeout bounds a query's embedding; 0: DefaultQueryEmbedTimeout.
	embedTimeout time.Duration
	// searching holds a token for every index search under way: at
	// most its capacity run at once (see searchIndex); waiting counts
	// those waiting for a token.
	searching chan struct{}
	waiting   atomic.Int64
}

// New returns a query service. web may be nil.
func New(engine Engine, st Store, answerer llm.Answerer, web WebSearcher, log *slog.Logger) *Service {
	return &Service{indexes: engine.Indexes(), engine: engine, store: st, answerer: answerer, fallback: llm.NewExtractive(), web: web, log: log,
		searching: make(chan struct{}, DefaultMaxSearches())}
}

// DefaultMaxSearches is how many index searches run at once unless
// SetMaxSearches says otherwise: twice GOMAXPROCS (see searchIndex).
func DefaultMaxSearches() int { return 2 * runtime.GOMAXPROCS(0) }

// SetMaxSearches bounds the index searches that run at once; 0 or less
// restores DefaultMaxSearches. Call it before the service searches.
func (s *Service) SetMaxSearches(n int) {
	if n <= 0 {
		n = DefaultMaxSearches()
	}
	s.searching = make(chan struct{}, n)
}

// SetMetrics makes the service record query embedding and answer times.
func (s *Service) SetMetrics(m *metrics.Metrics) {
	s.metrics = m
	m.WatchSearches(func() int { return len(s.searching) }, func() int { return int(s.waiting.Load()) })
}

// SetQueryEmbedTimeout sets how long a query waits for its vector before
// it is answered from the lexical index alone; 0 or less restores
// DefaultQueryEmbedTimeout.
func (s *Service) SetQueryEmbedTimeout(d time.Duration) { s.embedTimeout = d }

func (s *Service) queryEmbedTimeout() time.Duration {
	if s.embedTimeout > 0 {
		return s.embedTimeout
	}
	return DefaultQueryEmbedTimeout
}

// Result is one chunk a search found.
type Result struct {
	Chunk        store.Chunk
	DocumentName string
	Score        float64
	Lang         analysis.Lang // the language the index analysed the chunk's text in
}

// Search returns an owner's k best chunks for query, best first. When the
// query cannot be embedded (the model server is down, say) it still answers
// from the lexical index and says why in warnings: a degraded answer beats
// none.
func (s *Service) Search(ctx context.Context, owner, query string, k int) ([]Result, []string, error) {
	return s.SearchFiltered(ctx, owner, query, k, nil)
}

// Waiting for the index to catch up with the store. A commit writes the
// store first and publishes the index version with the same change right
// after; a search that read the index before the publish and the store
// after finds some of its chunks gone (a replaced document's, a deleted
// one's). It then searches again on the version that follows, so that its
// results are one version's: a replaced document's old chunks or its new
// ones, never neither.
const (
	// staleRetries bounds the searches again; a version is only behind
	// while one commit runs, so one is nearly always enough.
	staleRetries = 3
	// staleWait bounds each wait for the next version; past it the
	// search answers with the chunks it found.
	staleWait = 2 * time.Second
)

// SearchFiltered is Search within the documents filter allows (nil: all of
// them). The filter is applied inside retrieval, so k chunks come back
// whenever k allowed chunks match.
func (s *Service) SearchFiltered(ctx context.Context, owner, query string, k int, filter *Filter) ([]Result, []string, error) {
	x, err := s.indexes.Get(owner)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	q := index.Query{Text: query, K: k, Filter: filter.indexFilter(), FilterKey: filter.key()}
	embedder, err := s.engine.Embedder(x.Model())
	if err != nil {
		warnings = append(warnings, "results are lexical only: "+err.Error())
	} else if q.Vector, err = s.embedQueryWithin(ctx, embedder, query, x); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		s.log.Warn("query embedding failed; answering from the lexical index", "owner", owner, "err", err)
		if errors.Is(err, errEmbedderBusy) {
			warnings = append(warnings, fmt.Sprintf("the embedding model %s was busy and did not embed the query within %s; results are lexical only", embedder.Model(), s.queryEmbedTimeout()))
		} else {
			warnings = append(warnings, fmt.Sprintf("semantic search is unavailable (%s); results are lexical only", llm.Describe(err)))
		}
	}
	if n := s.indexes.Waiting(owner); n == 1 {
		warnings = append(warnings, "1 chunk is still being embedded; it is found by its words only")
	} else if n > 1 {
		warnings = append(warnings, fmt.Sprintf("%d chunks are still being embedded; they are found by their words only", n))
	}
	if n := s.indexes.CatchingUp(owner); n > 0 {
		warnings = append(warnings, fmt.Sprintf("the index is catching up with the store since this server started: %d of its chunks are not found yet", n))
	}
	var hits []index.Hit
	var chunks []store.Chunk
	for attempt := 0; ; attempt++ {
		ver := x.Current()
		q.At = ver
		if hits, err = s.searchIndex(ctx, x, q); err != nil {
			return nil, nil, err
		}
		seqs := make([]uint64, len(hits))
		for i, h := range hits {
			seqs[i] = h.ID
		}
		if chunks, err = s.store.ChunksBySeq(seqs); err != nil {
			return nil, nil, fmt.Errorf("search: read chunks: %w", err)
		}
		if len(chunks) == len(hits) || attempt == staleRetries || !s.awaitNext(ctx, ver) {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	hit := make(map[uint64]index.Hit, len(hits))
	for _, h := range hits {
		hit[h.ID] = h
	}
	names, err := s.store.DocumentNames(chunks)
	if err != nil {
		return nil, nil, fmt.Errorf("search: read document names: %w", err)
	}
	results := make([]Result, len(chunks))
	for i, c := range chunks {
		h := hit[c.Seq]
		results[i] = Result{Chunk: c, DocumentName: names[c.DocumentID], Score: h.Score, Lang: h.Lang}
	}
	return results, warnings, nil
}

// searchIndex is x.Search(q), run once fewer than the bound (twice
// GOMAXPROCS unless serve's --max-searches says otherwise) other searches
// are. A search is processor work from its start to its end (even a page
// fault on the memory-mapped snapshot holds its processor), so running
// many more at once than there are processors finishes none sooner,
// while each holds its scratch: a score per chunk for BM25, a mark per
// node for the graph walk, megabytes at a million chunks. With 256
// clients at once a million-chunk server's anonymous memory went from 0.3
// to 1.1–1.8 GB without a bound, and to 0.53 GB with it. Twice, not once,
// the processors: with one search a processor, a query waits for all of
// those ahead of it to end, and with 8 clients on 2 cores the median rose
// (8–9 ms against 5–8). The searches beyond the bound wait in the order
// they came (a channel serves its waiting senders first come, first
// served), or until their request ends.
//
// Each search first yields its processor, so that queries are searched
// about in the order they came (see runtimepolicy.YieldBeforeSearch).
func (s *Service) searchIndex(ctx context.Context, x *index.OwnerIndex, q index.Query) ([]index.Hit, error) {
	runtimepolicy.YieldBeforeSearch()
	s.waiting.Add(1)
	select {
	case s.searching <- struct{}{}:
		s.waiting.Add(-1)
	case <-ctx.Done():
		s.waiting.Add(-1)
		return nil, ctx.Err()
	}
	defer func() { <-s.searching }()
	return x.Search(q), nil
}

// awaitNext waits until a version newer than ver is published, and
// reports whether one was within staleWait (and before ctx ended).
func (s *Service) awaitNext(ctx context.Context, ver index.Version) bool {
	t := time.NewTimer(staleWait)
	defer t.Stop()
	select {
	case <-ver.Superseded():
		return true
	case <-ctx.Done():
	case <-t.C:
		s.log.Warn("the index did not catch up with the store in time; answering with the chunks found")
	}
	return false
}

// errEmbedderBusy is a query embedding stopped by the time bound.
var errEmbedderBusy = errors.New("the embedding model did not answer in time")

// embedQueryWithin is embedQuery bounded by the query embedding timeout.
// The request is cancelled, not left running: a model server that embeds
// one input at a time would otherwise still spend its time on it.
func (s *Service) embedQueryWithin(ctx context.Context, em llm.Embedder, query string, x *index.OwnerIndex) ([]float32, error) {
	bounded, cancel := context.WithTimeout(ctx, s.queryEmbedTimeout())
	defer cancel()
	vec, err := s.embedQuery(bounded, em, query, x)
	if err != nil && ctx.Err() == nil && bounded.Err() != nil {
		return nil, fmt.Errorf("%w: %w", errEmbedderBusy, err)
	}
	return vec, err
}

// embedQuery embeds a query the way the embedder's model wants queries,
// and, for an embedder that analyses text by language, in the language of the
// owner's chunks when the query is too short to tell its own.
func (s *Service) embedQuery(ctx context.Context, em llm.Embedder, query string, x *index.OwnerIndex) ([]float32, error) {
	start := time.Now()
	defer func() { s.metrics.Embedded(em.Model(), "query", time.Since(start)) }()
	if le, ok := em.(llm.LanguageQueryEmbedder); ok {
		return le.EmbedQueryFor(ctx, query, x.Language())
	}
	if qe, ok := em.(llm.QueryEmbedder); ok {
		return qe.EmbedQuery(ctx, query)
	}
	vecs, err := em.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}
