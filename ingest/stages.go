package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/docsift/docsift/analysis"
	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
)

// A document becomes searchable in two steps, because embedding is by far
// the slowest one: a CPU-only model server embeds one or two chunks a
// second, so a long PDF takes minutes.
//
//  1. Its chunks are written and added to the owner's index as soon as they
//     are split, with the vectors the embedding cache already holds and none
//     for the rest: a chunk without a vector is found by its words (the
//     index holds a zero vector for it, which no vector search ranks).
//  2. The rest are embedded batch by batch, and each batch's vectors are
//     written and added to the index as it completes: searches find those
//     chunks by meaning from then on, and a crash loses only the batch
//     under way, since the next run takes the others from the cache.
//
// The job ends SUCCEEDED only when every chunk has its vector, and a job
// that fails for good takes its chunks out again. An upload that replaces
// another under its external id is the exception: it is embedded whole
// and then swapped for the old version in one commit, so that searches see
// one version or the other, never both.

// docRun is one run of a document through the two steps.
type docRun struct {
	engine *Engine
	doc    *store.Document
	model  string
	chunks []store.Chunk // each chunk's Seq as last written
	title  string        // the document's, for the chunks' titles
	idoc   *index.Document
	// analyses are the chunks' analyses, by chunk, when the embedder made
	// them (see llm.AnalyzingEmbedder); nil otherwise.
	analyses []analysis.Analyzed
}

// pendingText is a text still to embed and the chunks (indexes in
// docRun.chunks) whose text it is: a text repeated in a document is embedded once.
type pendingText struct {
	text   string
	chunks []int
}

// embedAndIndex runs both steps for texts, the embedder's input of each
// chunk.
func (d *docRun) embedAndIndex(ctx context.Context, embedder llm.Embedder, texts []string) error {
	e := d.engine
	d.title, d.idoc = documentTitle(d.chunks[0].Text), indexDocument(d.doc)
	if candidate, err := d.replacesAnother(); err != nil {
		return err
	} else if candidate {
		// Searches see one version of a document under an external id,
		// the old or the new (store/rules.go): the new one's chunks
		// enter the index all at once, vectors and all, as the old one's
		// leave.
		vectors, err := e.embedCached(ctx, d.doc.OwnerID, embedder, texts)
		if err != nil {
			return err
		}
		return d.writeChunks(vectors, 0)
	}
	if llm.InProcess(embedder) {
		// Embedding here takes microseconds a chunk, less than reading
		// the embedding cache would (see store/bolt/embedcache.go), and less
		// than a second commit and index update: the chunks are written
		// once, with their vectors.
		if ae, ok := embedder.(llm.AnalyzingEmbedder); ok && textBytes(d.chunks) <= analysedTextMax {
			vectors, err := d.embedAnalyzing(ctx, ae, texts)
			if err != nil {
				return err
			}
			return d.writeChunks(vectors, 0)
		}
		vectors := make([][]float32, len(texts))
		if err := d.embedInto(ctx, embedder, pendingTexts(texts, vectors), vectors); err != nil {
			return err
		}
		return d.writeChunks(vectors, 0)
	}
	hashes := make([]string, len(d.chunks))
	for i, c := range d.chunks {
		hashes[i] = c.TextHash
	}
	vectors, err := e.store.CachedVectors(d.doc.OwnerID, d.model, hashes)
	if err != nil {
		return fmt.Errorf("reading the embedding cache failed: %w", err)
	}
	todo := pendingTexts(texts, vectors)
	if reused := len(texts) - countChunks(todo); reused > 0 {
		e.log.Debug("embeddings reused", "document", d.doc.ID, "model", d.model, "chunks", len(texts), "reused", reused)
	}
	// The index of an owner with no vectors yet is sized by the model's
	// dimension; a model server's is unknown until it has embedded
	// something, so then the chunks are written with the first batch.
	written := false
	if embedder.Dim() > 0 {
		if err := d.writeChunks(vectors, embedder.Dim()); err != nil {
			return err
		}
		written = true
	}
	for start := 0; start < len(todo); start += e.cfg.EmbedBatch {
		batch := todo[start:min(start+e.cfg.EmbedBatch, len(todo))]
		batchTexts := make([]string, len(batch))
		for i, p := range batch {
			batchTexts[i] = p.text
		}
		vecs, err := e.embed(ctx, embedder, batchTexts)
		if err != nil {
			return err
		}
		if written {
			if err := d.addVectors(batch, vecs); err != nil {
				return err
			}
			continue
		}
		for i, p := range batch {
			for _, j := range p.chunks {
				vectors[j] = vecs[i]
			}
		}
		if err := d.writeChunks(vectors, len(vecs[0])); err != nil {
			return err
		}
		written = true
	}
	if !written { // every vector came from the cache
		return d.writeChunks(vectors, 0)
	}
	return nil
}

// analysedTextMax bounds the text of a document whose analyses the index
// takes from the embedder. The analyses, 2.5 times the text, are held
// from the embedding until the chunks are written; a larger document (a
// long PDF's) spares that memory, for a little more CPU, by letting the
// index analyse its chunks again.
const analysedTextMax = 1 << 20

func textBytes(chunks []store.Chunk) int {
	n := 0
	for _, c := range chunks {
		n += len(c.Text)
	}
	return n
}

// embedAnalyzing embeds every chunk's text (entryText's) with ae and
// keeps the analyses for the index.
func (d *docRun) embedAnalyzing(ctx context.Context, ae llm.AnalyzingEmbedder, texts []string) ([][]float32, error) {
	start := time.Now()
	vectors, analyses, err := ae.EmbedAnalyzed(ctx, d.doc.Name, texts)
	d.engine.cfg.Metrics.Embedded(d.model, "document", time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("embedding failed: %w", err)
	}
	d.analyses = analyses
	return vectors, nil
}

// embedInto embeds the texts of todo and sets the vectors of their chunks.
func (d *docRun) embedInto(ctx context.Context, embedder llm.Embedder, todo []pendingText, vectors [][]float32) error {
	texts := make([]string, len(todo))
	for i, p := range todo {
		texts[i] = p.text
	}
	vecs, err := d.engine.embed(ctx, embedder, texts)
	if err != nil {
		return err
	}
	for i, p := range todo {
		for n, j := range p.chunks {
			vectors[j] = vecs[i]
			if n > 0 {
				vectors[j] = slices.Clone(vecs[i]) // the index keeps what it is given
			}
		}
	}
	return nil
}

// replacesAnother reports whether the document is to replace another one
// holding its external id.
func (d *docRun) replacesAnother() (bool, error) {
	if d.doc.ExternalID == "" {
		return false, nil
	}
	holder, err := d.engine.store.DocumentByExternalID(d.doc.OwnerID, d.doc.ExternalID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return holder.ID != d.doc.ID, nil
}

// pendingTexts lists the texts with no vector yet, each once, in the order
// of their first chunk.
func pendingTexts(texts []string, vectors [][]float32) []pendingText {
	var todo []pendingText
	at := map[string]int{} // text → index in todo
	for i, v := range vectors {
		if v != nil {
			continue
		}
		j, seen := at[texts[i]]
		if !seen {
			j = len(todo)
			at[texts[i]] = j
			todo = append(todo, pendingText{text: texts[i]})
		}
		todo[j].chunks = append(todo[j].chunks, i)
	}
	return todo
}

func countChunks(todo []pendingText) int {
	n := 0
	for _, p := range todo {
		n += len(p.chunks)
	}
	return n
}

// writeChunks is step 1: it writes the document's chunks, with the vectors
// known (nil for the others), and adds them to the owner's index in one
// commit, replacing what an earlier run of the job left; the commit may
// hold other documents of the owner (see chunkWrites). dim, when not 0, is
// the model's dimension, recorded for an owner that has no vectors yet.
func (d *docRun) writeChunks(vectors [][]float32, dim int) error {
	e, owner := d.engine, d.doc.OwnerID
	if dim > 0 && slices.ContainsFunc(vectors, func(v []float32) bool { return v == nil }) {
		if err := e.store.ClaimOwnerModel(owner, d.model, dim); err != nil {
			return err
		}
	}
	return e.writes.write(owner, &chunkWrite{doc: d, vectors: vectors})
}

// addVectors is step 2 for one batch: the vectors of the batch's texts,
// vecs[i] that of batch[i], reach the store and the index in one commit.
func (d *docRun) addVectors(batch []pendingText, vecs [][]float32) error {
	e, owner := d.engine, d.doc.OwnerID
	var at []int // indexes in d.chunks
	var seqs []uint64
	var vectors [][]float32
	for i, p := range batch {
		for n, j := range p.chunks {
			v := vecs[i]
			if n > 0 {
				v = slices.Clone(v) // the index keeps what it is given
			}
			at, seqs, vectors = append(at, j), append(seqs, d.chunks[j].Seq), append(vectors, v)
		}
	}
	return e.indexes.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
		if x.Model() != d.model {
			return 0, errReindexed(x)
		}
		newSeqs, removed, _, err := e.store.AddVectors(d.doc.ID, d.model, seqs, vectors)
		if err != nil {
			return 0, storeError(err)
		}
		x.Delete(removed...)
		var last uint64
		entries := make([]index.Entry, 0, len(at))
		for i, j := range at {
			if newSeqs[i] == 0 {
				continue
			}
			d.chunks[j].Seq = newSeqs[i]
			entries = append(entries, d.entry(j, vectors[i]))
			last = max(last, newSeqs[i])
		}
		e.indexes.NoteWaiting(owner, nil, removed)
		return last, x.Add(entries...)
	})
}

// entry is chunk i as the index takes it, with vector vec.
func (d *docRun) entry(i int, vec []float32) index.Entry {
	c := d.chunks[i]
	e := index.Entry{ID: c.Seq, Vector: vec, Text: c.Text, Doc: d.idoc, Name: d.doc.Name, Title: chunkTitle(d.title, c)}
	if d.analyses != nil {
		e.Analyzed = &d.analyses[i]
	}
	return e
}

// dropChunks takes out of the store and the index the chunks a job wrote
// before failing for good: a FAILED document is not searched.
func (e *Engine) dropChunks(doc *store.Document) error {
	return e.indexes.Update(doc.OwnerID, func(x *index.OwnerIndex) (uint64, error) {
		removed, err := e.store.DeleteChunks(doc.ID)
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil // deleted meanwhile, chunks and all
		}
		x.Delete(removed...)
		e.indexes.NoteWaiting(doc.OwnerID, nil, removed)
		return 0, err
	})
}

// zeroVector stands for a vector still to come: its cosine with any query
// is 0, so vector search never ranks the chunk, while BM25 finds it.
func zeroVector(dim int) []float32 { return make([]float32, dim) }

func errReindexed(x *index.OwnerIndex) error {
	return fmt.Errorf("this owner was reindexed with %s while the document was processed; upload it again", x.Model())
}

// storeError turns the store's refusals into the job's errors.
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errDocumentDeleted
	case errors.Is(err, store.ErrSuperseded):
		return errSuperseded
	}
	return err
}
