package ingest

import (
	"context"
	"fmt"
	"slices"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
)

// embedCached returns one vector per text, embedding only what the store
// cannot already give: a text one of the owner's chunks was embedded from
// with this model takes that chunk's vector (store.CachedVectors says why
// that is safe and needs no clean-up), and a text repeated within texts is
// embedded once. A re-uploaded document, a job re-run after a crash and a
// reindex that starts over therefore cost the model nothing for what was
// done before.
//
// The cache is read once, before embedding: vectors committed meanwhile by
// another job of the same owner are not looked for again, which costs at
// most a duplicate embedding, never a wrong vector. An in-process embedder
// does not use it (see store/bolt/embedcache.go).
func (e *Engine) embedCached(ctx context.Context, owner string, embedder llm.Embedder, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if !llm.InProcess(embedder) {
		hashes := make([]string, len(texts))
		for i, t := range texts {
			hashes[i] = store.TextHash(t)
		}
		var err error
		if out, err = e.store.CachedVectors(owner, embedder.Model(), hashes); err != nil {
			return nil, fmt.Errorf("reading the embedding cache failed: %w", err)
		}
	}
	// The texts left to embed, each once, and where each one's vector goes.
	first := map[string]int{} // text → index in todo
	var todo []string
	var slot []int // per text: its index in todo, or -1 when cached
	for i, v := range out {
		if v != nil {
			slot = append(slot, -1)
			continue
		}
		j, seen := first[texts[i]]
		if !seen {
			j = len(todo)
			first[texts[i]] = j
			todo = append(todo, texts[i])
		}
		slot = append(slot, j)
	}
	if len(todo) > 0 {
		vecs, err := e.embed(ctx, embedder, todo)
		if err != nil {
			return nil, err
		}
		used := make([]bool, len(todo))
		for i, j := range slot {
			if j < 0 {
				continue
			}
			// A repeated text gets a copy: the index keeps the slices it
			// is given, and two entries must not share one.
			if used[j] {
				out[i] = slices.Clone(vecs[j])
			} else {
				out[i], used[j] = vecs[j], true
			}
		}
	}
	if reused := len(texts) - len(todo); reused > 0 {
		e.log.Debug("embeddings reused", "owner", owner, "model", embedder.Model(), "texts", len(texts), "embedded", len(todo))
	}
	return out, nil
}
