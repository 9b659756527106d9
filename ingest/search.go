package ingest

import (
	"context"
	"fmt"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
)

// Result is one chunk a search found.
type Result struct {
	Chunk        store.Chunk
	DocumentName string
	Score        float64
}

// Search returns an owner's k best chunks for query, best first. When the
// query cannot be embedded (the model server is down, say) it still answers
// from the lexical index and says why in warnings: a degraded answer beats
// none.
func (e *Engine) Search(ctx context.Context, owner, query string, k int) ([]Result, []string, error) {
	x, err := e.indexes.Get(owner)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	q := index.Query{Text: query, K: k}
	embedder, err := e.embedderFor(x.Model())
	if err != nil {
		warnings = append(warnings, "results are lexical only: "+err.Error())
	} else if vec, err := embedQuery(ctx, embedder, query); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		e.log.Warn("query embedding failed; answering from the lexical index", "owner", owner, "err", err)
		warnings = append(warnings, fmt.Sprintf("semantic search is unavailable (%v); results are lexical only", err))
	} else {
		q.Vector = vec
	}
	hits := x.Search(q)
	seqs := make([]uint64, len(hits))
	score := make(map[uint64]float64, len(hits))
	for i, h := range hits {
		seqs[i] = h.ID
		score[h.ID] = h.Score
	}
	chunks, err := e.store.ChunksBySeq(seqs)
	if err != nil {
		return nil, nil, fmt.Errorf("ingest: search: %w", err)
	}
	names := map[string]string{}
	results := make([]Result, 0, len(chunks))
	for _, c := range chunks {
		name, ok := names[c.DocumentID]
		if !ok {
			if d, err := e.store.Document(c.DocumentID); err == nil {
				name = d.Name
			}
			names[c.DocumentID] = name
		}
		results = append(results, Result{Chunk: c, DocumentName: name, Score: score[c.Seq]})
	}
	return results, warnings, nil
}

// embedQuery embeds a query the way the embedder's model wants queries.
func embedQuery(ctx context.Context, em llm.Embedder, query string) ([]float32, error) {
	if qe, ok := em.(llm.QueryEmbedder); ok {
		return qe.EmbedQuery(ctx, query)
	}
	vecs, err := em.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}
