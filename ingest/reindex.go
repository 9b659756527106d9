package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/store"
)

// reindexBatch is how many chunks are read and embedded per step.
const reindexBatch = 256

// StaleOwners lists the owners whose vectors come from another model than
// the engine's embedder: the ones `docsift reindex` re-embeds.
func (e *Engine) StaleOwners() ([]string, error) {
	owners, err := e.store.Owners()
	if err != nil {
		return nil, err
	}
	var stale []string
	for o, om := range owners {
		if om.Model != e.embedder.Model() {
			stale = append(stale, o)
		}
	}
	return stale, nil
}

// Reindex re-embeds every chunk of an owner with the engine's embedder and
// switches the owner to it. Queries keep using the old vectors until the
// switch, which is one store transaction and one pointer swap, so there is no
// downtime. New vectors are staged beside the old ones: a crash midway
// leaves the owner on its old model, and a second run starts over.
// progress, when not nil, is told how many of total chunks are done.
func (e *Engine) Reindex(ctx context.Context, owner string, progress func(done, total int)) (int, error) {
	target := e.embedder
	current, err := e.ownerModel(owner)
	if err != nil {
		return 0, err
	}
	if current == target.Model() {
		return 0, nil
	}
	if err := e.store.BeginReindex(owner, target.Model()); err != nil {
		return 0, err
	}
	seqs, err := e.store.OwnerSeqs(owner)
	if err != nil {
		return 0, err
	}
	x := e.cfg.Indexes.Index.New(target.Model(), target.Dim())
	done := 0
	for start := 0; start < len(seqs); start += reindexBatch {
		if err := e.reembed(ctx, owner, x, seqs[start:min(start+reindexBatch, len(seqs))]); err != nil {
			return done, err
		}
		done = min(start+reindexBatch, len(seqs))
		if progress != nil {
			progress(done, len(seqs))
		}
	}
	// Documents uploaded or deleted meanwhile: catch up under the owner's
	// lock, so nothing lands between the check and the switch.
	err = e.indexes.Replace(owner, func(*index.OwnerIndex) (*index.OwnerIndex, error) {
		missing, err := e.store.MissingVectors(owner, target.Model())
		if err != nil {
			return nil, err
		}
		if err := e.reembed(ctx, owner, x, missing); err != nil {
			return nil, err
		}
		now, err := e.store.OwnerSeqs(owner)
		if err != nil {
			return nil, err
		}
		keep := make(map[uint64]bool, len(now))
		for _, s := range now {
			keep[s] = true
		}
		var gone []uint64
		for _, id := range x.IDs() {
			if !keep[id] {
				gone = append(gone, id)
			}
		}
		x.Delete(gone...)
		if err := e.store.FinishReindex(owner, target.Model(), target.Dim()); err != nil {
			return nil, err
		}
		return x, nil
	})
	if err != nil {
		return done, fmt.Errorf("ingest: reindex %s: %w", owner, err)
	}
	e.log.Info("owner reindexed", "owner", owner, "from", current, "to", target.Model(), "chunks", x.Len())
	return x.Len(), nil
}

// reembed embeds the chunks of seqs with the engine's embedder, stages their
// vectors in the store and adds them to x. Vectors an earlier run that did
// not finish staged are kept, so a reindex interrupted by a crash resumes
// rather than starts over; the embedding cache then spares the model the
// texts other chunks already gave it.
func (e *Engine) reembed(ctx context.Context, owner string, x *index.OwnerIndex, seqs []uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	chunks, err := e.store.ChunksBySeq(seqs)
	if err != nil {
		return err
	}
	docs, err := e.store.DocumentsOf(chunks)
	if err != nil {
		return err
	}
	idocs := indexDocuments(docs)
	titles, err := titlesOf(e.store, chunks)
	if err != nil {
		return err
	}
	texts := make([]string, len(chunks))
	found := make([]uint64, len(chunks))
	docOf := make([]*index.Document, len(chunks))
	for i, c := range chunks {
		texts[i], found[i], docOf[i] = entryText(docName(docs[c.DocumentID]), c.Text), c.Seq, idocs[c.DocumentID]
	}
	vecs, err := e.store.Vectors(e.embedder.Model(), found)
	if err != nil {
		return err
	}
	var todo []int // indexes in chunks of those with no vector staged
	for i, v := range vecs {
		if v == nil {
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		todoTexts, todoSeqs := make([]string, len(todo)), make([]uint64, len(todo))
		for j, i := range todo {
			todoTexts[j], todoSeqs[j] = texts[i], found[i]
		}
		embedded, err := e.embedCached(ctx, owner, e.embedder, todoTexts)
		if err != nil {
			return err
		}
		if err := e.store.PutVectors(e.embedder.Model(), todoSeqs, embedded); err != nil {
			return err
		}
		for j, i := range todo {
			vecs[i] = embedded[j]
		}
	}
	entries := make([]index.Entry, len(found))
	for i, c := range chunks {
		d := c.DocumentID
		entries[i] = index.Entry{ID: found[i], Vector: vecs[i], Text: c.Text, Doc: docOf[i], Name: docName(docs[d]), Title: chunkTitle(titles[d], c)}
	}
	return x.Add(entries...)
}

// CheckOwner checks that owner is a project or a customer in the store:
// `docsift reindex --owner` asks before Reindex records anything about it.
func (e *Engine) CheckOwner(owner string) error {
	var err error
	switch {
	case strings.HasPrefix(owner, store.PrefixProject):
		_, err = e.store.Project(owner)
	case strings.HasPrefix(owner, store.PrefixCustomer):
		_, err = e.store.Customer(owner)
	default:
		return fmt.Errorf("%q is not an owner's id: a project's begins with %s, a customer's with %s", owner, store.PrefixProject, store.PrefixCustomer)
	}
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("owner %s: no project or customer has that id", owner)
	}
	return err
}
