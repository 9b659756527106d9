package ingest

import (
	"sync"

	"github.com/docsift/docsift/index"
)

// Step 1 of a document (stages.go) writes its chunks to the store and adds
// them to its owner's index under the owner's commit lock, so that the two
// never disagree. One document at a time, an owner's small documents would
// each wait for a store commit of their own with the lock held: a few
// hundred a second at most, however many workers run. So documents of one
// owner that reach step 1 while another one's is under way wait, and the
// next commit takes all of them: their store writes go at once, and the
// store commits them together (store/bolt/commit.go), and one index commit adds
// all their chunks.

// chunkWrites queues step 1 of documents by owner.
type chunkWrites struct {
	engine *Engine

	mu      sync.Mutex
	waiting map[string][]*chunkWrite // by owner
	leading map[string]bool          // an owner's commit is under way
}

// chunkWrite is step 1 of one document: its chunks with the vectors known
// (nil for the others).
type chunkWrite struct {
	doc      *docRun
	vectors  [][]float32
	removed  []uint64 // the store's answer: sequences to drop from the index
	analysed index.Analysed
	err      error
	wake     chan bool // true: commit the next group; false: done
}

// write runs w's step 1, in a group with the other documents of owner
// that wait meanwhile, and returns w's outcome.
func (q *chunkWrites) write(owner string, w *chunkWrite) error {
	w.wake = make(chan bool, 1)
	q.mu.Lock()
	if q.waiting == nil {
		q.waiting, q.leading = map[string][]*chunkWrite{}, map[string]bool{}
	}
	q.waiting[owner] = append(q.waiting[owner], w)
	lead := !q.leading[owner]
	q.leading[owner] = true
	q.mu.Unlock()
	if !lead && !<-w.wake {
		return w.err
	}
	// This document's worker commits every one waiting now, its own among
	// them, then hands the lead to the first that came meanwhile.
	q.mu.Lock()
	group := q.waiting[owner]
	delete(q.waiting, owner)
	q.mu.Unlock()
	q.commit(owner, group)
	q.mu.Lock()
	if next := q.waiting[owner]; len(next) > 0 {
		next[0].wake <- true
	} else {
		delete(q.leading, owner)
	}
	q.mu.Unlock()
	for _, other := range group {
		if other != w {
			other.wake <- false
		}
	}
	return w.err
}

// commit writes the group's chunks to the store and adds them to the
// owner's index in one index commit. Each document's store write is its
// own transaction, so one refused (deleted meanwhile, superseded) fails
// only its own document.
func (q *chunkWrites) commit(owner string, group []*chunkWrite) {
	e := q.engine
	err := e.indexes.Update(owner, func(x *index.OwnerIndex) (uint64, error) {
		// The writes go at once, so that the store commits them together,
		// and each document's chunks are analysed into terms beside the others:
		// only adding them to the index takes turns.
		zero := zeroVector(x.Dim()) // the index copies it
		var wg sync.WaitGroup
		for _, w := range group {
			if x.Model() != w.doc.model {
				w.err = errReindexed(x)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A replacement under an external id removes the old
				// version in the store's transaction once the new one
				// has every vector; its chunks are among removed, so
				// that this one commit swaps the versions for searches.
				removed, err := e.store.ReplaceChunks(w.doc.doc.ID, w.doc.model, w.doc.chunks, w.vectors)
				w.removed, w.err = removed, storeError(err)
				if w.err != nil {
					return
				}
				entries := make([]index.Entry, len(w.doc.chunks))
				for i := range w.doc.chunks {
					vec := w.vectors[i]
					if vec == nil {
						vec = zero
					}
					entries[i] = w.doc.entry(i, vec)
				}
				w.analysed, w.err = x.Analyse(entries...)
			}()
		}
		wg.Wait()
		var last uint64
		var analysed []index.Analysed
		var waiting, removed []uint64
		for _, w := range group {
			if w.err != nil {
				continue
			}
			removed = append(removed, w.removed...)
			for i, c := range w.doc.chunks {
				if w.vectors[i] == nil {
					waiting = append(waiting, c.Seq)
				}
				last = max(last, c.Seq)
			}
			analysed = append(analysed, w.analysed)
		}
		// Added first, then removed: a document of the group that took
		// over another's external id removed that one's chunks, which
		// may be of this group too.
		err := x.AddAnalysed(analysed...)
		x.Delete(removed...)
		e.indexes.NoteWaiting(owner, waiting, nil)
		e.indexes.NoteWaiting(owner, nil, removed)
		return last, err
	})
	if err != nil {
		for _, w := range group {
			if w.err == nil {
				w.err = err
			}
		}
	}
}
