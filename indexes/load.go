package indexes

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/internal/runtimepolicy"
	"github.com/docsift/docsift/store"
)

// CatchUp brings an owner's loaded index up to date with the store after
// another node changed the owner's chunks; an owner not loaded here has
// nothing to catch up. Searches see the change at once, when it is done.
// An owner reindexed meanwhile with another model is loaded afresh.
func (r *Set) CatchUp(owner string) error {
	e := r.loadedEntry(owner)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.loaded {
		return nil
	}
	model, dim, err := r.ownerModel(owner)
	if err != nil {
		return fmt.Errorf("indexes: catch up %s: %w", owner, err)
	}
	if model != e.x.Model() || dim != e.x.Dim() {
		e.loaded = false
		e.ready.Store(nil)
		return r.load(owner, e)
	}
	var changed bool
	var last uint64
	err = e.x.Commit(func() error {
		var err error
		changed, last, err = r.reconcile(owner, e.x)
		return err
	})
	if err != nil {
		return fmt.Errorf("indexes: catch up %s: %w", owner, err)
	}
	e.dirty = e.dirty || changed
	e.lastSeq = max(e.lastSeq, last)
	return nil
}

// CatchUpAll is CatchUp of every loaded owner.
func (r *Set) CatchUpAll() error {
	var errs []error
	for _, owner := range r.loadedOwners() {
		errs = append(errs, r.CatchUp(owner))
	}
	return errors.Join(errs...)
}

// load fills e from the owner's snapshot, or from nothing, then reconciles it
// with the store: entries the store no longer has are deleted, chunks the
// snapshot does not cover are added. A missing or corrupt snapshot only
// costs time. The caller holds e.mu; searches get the index only once it
// is caught up.
func (r *Set) load(owner string, e *ownerIndex) error {
	if e.loaded {
		return nil
	}
	model, dim, err := r.ownerModel(owner)
	if err != nil {
		return fmt.Errorf("indexes: load index of %s: %w", owner, err)
	}
	if e.ready.Load() == nil && r.preview(owner, e, model, dim) {
		return nil
	}
	start := time.Now()
	// The store's list of the owner's chunks is read beside the snapshot
	// (each a good part of a restart at a million chunks).
	type ownerSeqs struct {
		seqs []uint64
		err  error
	}
	stored := make(chan ownerSeqs, 1)
	go func() {
		seqs, err := r.src.OwnerSeqs(owner)
		stored <- ownerSeqs{seqs, err}
	}()
	// Behind a preview, the snapshot it checked is not checked again.
	x, lastSeq, err := r.opts.Index.ReadSnapshotAfter(r.path(owner), e.ready.Load())
	read := time.Since(start)
	fromSnapshot := false
	switch {
	case err == nil && (x.Model() != model || x.Dim() != dim):
		r.log.Warn("index snapshot is of another embedding model, rebuilding from the store", "owner", owner, "snapshot_model", x.Model(), "model", model)
		x, lastSeq = r.opts.Index.New(model, dim), 0
	case err == nil:
		fromSnapshot = true
		if serr := x.SkippedSegment(); serr != nil {
			r.log.Warn("index snapshot read without its segment; the changes it held are caught up from the store", "owner", owner, "err", serr)
		}
	case errors.Is(err, fs.ErrNotExist):
		x = r.opts.Index.New(model, dim)
	case errors.Is(err, index.ErrOtherVersion):
		r.log.Info("index snapshot is of another docsift version, rebuilding it from the store", "owner", owner, "err", err)
		x, lastSeq = r.opts.Index.New(model, dim), 0
	default:
		r.log.Warn("index snapshot unusable, rebuilding from the store", "owner", owner, "err", err)
		x, lastSeq = r.opts.Index.New(model, dim), 0
	}
	st := <-stored
	if st.err != nil {
		return fmt.Errorf("indexes: load index of %s: %w", owner, st.err)
	}
	missing, stale, last := compare(st.seqs, x)
	// What a restart's wait is made of, for whoever is waiting.
	r.log.Info("index snapshot read and compared with the store", "owner", owner, "entries", x.Len(),
		"read_ms", read.Milliseconds(), "compare_ms", (time.Since(start) - read).Milliseconds(),
		"missing", len(missing), "stale", len(stale))
	x.Delete(stale...)
	e.loaded, e.dirty, e.saved = true, len(stale) > 0, x.Len()
	e.lastSeq = max(lastSeq, last)
	inline := r.opts.CatchUpInline
	if left := r.opts.CatchUpWait - time.Since(start); left > 0 {
		inline = max(inline, int(left/catchUpPerChunk))
	}
	if len(missing) <= inline {
		if err := r.addMissing(owner, x, missing, len(stale)); err != nil {
			e.loaded = false
			return fmt.Errorf("indexes: load index of %s: %w", owner, err)
		}
		e.dirty = e.dirty || len(missing) > 0
		e.set(x)
		r.counted(e)
		r.saveWhenGrown()
		r.setCatchingUp(owner, 0) // counted by a preview
		return nil
	}
	// Searchable now, as of its snapshot; the chunks added since (a
	// crash before the next snapshot) follow batch by batch, each
	// published as it is indexed, and searches say how many are still
	// missing. Commits wait for the catch-up, which holds the commit lock.
	e.set(x)
	r.setCatchingUp(owner, len(missing))
	if fromSnapshot {
		r.log.Info("index loaded from its snapshot; catching up with the store", "owner", owner, "chunks", len(missing))
	} else {
		r.log.Info("no index snapshot: the index is built from the store, searchable as it grows", "owner", owner, "chunks", len(missing))
	}
	r.opts.Go(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.x != x {
			// Replaced meanwhile (a reindex), or loaded again: the
			// index that replaced it was made whole.
			r.setCatchingUp(owner, 0)
			return
		}
		e.dirty = true
		if err := r.addMissing(owner, x, missing, len(stale)); err != nil {
			// Load again, from the snapshot, at the next use.
			r.log.Error("index catch-up failed; it is loaded again at the next use", "owner", owner, "err", err)
			e.loaded = false
			e.ready.Store(nil)
		}
		r.counted(e)
		r.saveWhenGrown()
		r.setCatchingUp(owner, 0)
	})
	return nil
}

// preview makes the owner searchable as of its snapshot alone when the
// segments beside it are large enough to hold up the first answer
// (previewSegmentBytes), and loads the whole index in the background; it
// reports whether it did. Searches meanwhile say how many chunks they do
// not find yet, as during a catch-up (see load). Commits wait for the
// whole index: the preview is e's for searches only (e.x is not set, nor
// e.loaded), so it is never changed nor saved, and the first commit to
// come loads the index itself if the background has not begun to. The
// caller holds e.mu.
func (r *Set) preview(owner string, e *ownerIndex, model string, dim int) bool {
	path := r.path(owner)
	if index.SegmentBytes(path) < r.opts.PreviewSegmentBytes {
		return false
	}
	start := time.Now()
	var seqs []uint64
	var seqsErr error
	stored := make(chan struct{})
	go func() { // beside the snapshot, as load does
		defer close(stored)
		seqs, seqsErr = r.src.OwnerSeqs(owner)
	}()
	x, _, err := r.opts.Index.ReadSnapshotAlone(path)
	if <-stored; err != nil || seqsErr != nil || x.Model() != model || x.Dim() != dim {
		return false // the whole load says why
	}
	missing, stale, _ := compare(seqs, x)
	x.Delete(stale...)
	r.setCatchingUp(owner, len(missing))
	e.ready.Store(x)
	r.log.Info("index searchable as of its snapshot; its segments and the store's later chunks load in the background",
		"owner", owner, "entries", x.Len(), "missing", len(missing), "ms", time.Since(start).Milliseconds())
	r.opts.Go(func() {
		r.behindPreviews <- struct{}{}
		defer func() { <-r.behindPreviews }()
		e.loadMu.Lock()
		defer e.loadMu.Unlock()
		e.mu.Lock()
		defer e.mu.Unlock()
		err := r.load(owner, e)
		if err != nil {
			// Load again, preview first, at the next use.
			r.log.Error("index load behind its preview failed; it is loaded again at the next use", "owner", owner, "err", err)
			e.ready.CompareAndSwap(x, nil)
			r.setCatchingUp(owner, 0)
		}
		// The preview's heap (its documents and maps, a few hundred
		// bytes a chunk) is garbage once its last search ends: given
		// back now rather than when the scavenger gets round to it.
		x = nil
		runtimepolicy.ReturnMemory()
	})
	return true
}

// previewSegmentBytes is the size of an owner's segments from which a
// restart searches its snapshot while they load (see preview). Applying
// a segment costs about 11 ms a megabyte when its chunks' word pairs are
// mostly distinct (2.5 s for four of 54 MB at a million chunks), less for
// common text; from this size a restart would wait a quarter of a second
// or more, while a preview costs a second read of the snapshot, in place
// and not checked again (see index.ReadSnapshotAfter).
const previewSegmentBytes = 24 << 20

// A load indexes the chunks missing from its snapshot before the owner is
// searchable when they fit in what is left of catchUpWait after reading
// the snapshot (indexing a chunk from the store takes about
// catchUpPerChunk), or are at most catchUpInline; past that, the owner is
// searchable at once and the rest follows (see load). A small owner so
// waits for up to two thousand, and a large one, whose snapshot alone
// takes a second to read, for a few hundred at most: a restart of a
// million chunks answers within two seconds however long after its last
// snapshot it crashed.
const (
	catchUpWait     = time.Second
	catchUpPerChunk = 500 * time.Microsecond
	catchUpInline   = 256
)

// compare compares x with an owner's chunks in the store, seqs (as
// store.OwnerSeqs lists them, ascending): the chunks x lacks, the entries
// the store no longer has, and the highest sequence the owner has.
func compare(seqs []uint64, x *index.OwnerIndex) (missing, stale []uint64, last uint64) {
	if len(seqs) > 0 {
		last = seqs[len(seqs)-1]
	}
	ids := x.IDs() // ascending, as seqs are
	i := 0
	for _, s := range seqs {
		for i < len(ids) && ids[i] < s {
			stale = append(stale, ids[i])
			i++
		}
		if i < len(ids) && ids[i] == s {
			i++
			continue
		}
		missing = append(missing, s)
	}
	stale = append(stale, ids[i:]...)
	return missing, stale, last
}

// addMissing adds the chunks of seqs to x and notes which of x's chunks
// have no vector; removed is how many stale entries were deleted, for the
// log.
func (r *Set) addMissing(owner string, x *index.OwnerIndex, seqs []uint64, removed int) error {
	added, err := r.addFromStore(owner, x, seqs)
	if err != nil {
		return err
	}
	// A chunk's sequence names its content, vector included (see
	// store.AddVectors), so the chunks the store has no vector for are
	// exactly those the index holds without one, snapshot or not: the
	// index tells them without a read of every vector's key in the store
	// (seconds at a million chunks).
	r.setWaiting(owner, x.WithoutVector())
	if removed+added > 0 {
		r.log.Info("index caught up with the store", "owner", owner, "added", added, "removed", removed)
	}
	return nil
}

// reconcile makes x hold exactly the owner's chunks in the store: entries
// the store no longer has are deleted, chunks x lacks are added, and the
// chunks without a vector are noted. It reports whether x changed, and the
// highest sequence the owner has.
func (r *Set) reconcile(owner string, x *index.OwnerIndex) (changed bool, last uint64, err error) {
	seqs, err := r.src.OwnerSeqs(owner)
	if err != nil {
		return false, 0, err
	}
	missing, stale, last := compare(seqs, x)
	x.Delete(stale...)
	if err := r.addMissing(owner, x, missing, len(stale)); err != nil {
		return false, 0, err
	}
	return len(stale)+len(missing) > 0, last, nil
}

// ownerModel is the model and dimension of an owner's vectors: recorded in
// the store once it has any, the default embedder's before.
func (r *Set) ownerModel(owner string) (string, int, error) {
	om, err := r.src.OwnerModel(owner)
	switch {
	case err == nil:
		return om.Model, om.Dim, nil
	case errors.Is(err, store.ErrNotFound):
		return r.model, r.dim(), nil
	}
	return "", 0, err
}

// catchUpBatch bounds how many chunks are read per batch while rebuilding.
const catchUpBatch = 512

func (r *Set) addFromStore(owner string, x *index.OwnerIndex, seqs []uint64) (int, error) {
	// The next batch is read from the store and analysed into terms while the
	// index adds this one: on two cores, catching up took the time of
	// both, one after the other.
	batches := make(chan storeBatch, 1)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		defer close(batches)
		for len(seqs) > 0 {
			n := min(len(seqs), catchUpBatch)
			b := r.readBatch(x, seqs[:n])
			b.left = len(seqs)
			select {
			case batches <- b:
			case <-stop:
				return
			}
			if b.err != nil {
				return
			}
			seqs = seqs[n:]
		}
	}()
	defer func() { close(stop); <-stopped }()
	added := 0
	for b := range batches {
		if b.err != nil {
			return added, b.err
		}
		if r.CatchingUp(owner) > 0 {
			r.setCatchingUp(owner, b.left)
		}
		if err := x.AddAnalysed(b.entries); err != nil {
			return added, err
		}
		added += b.n
	}
	return added, nil
}

// storeBatch is a batch of chunks read from the store for an index: their
// n entries, analysed, and how many chunks were left to add with it.
type storeBatch struct {
	entries index.Analysed
	n, left int
	err     error
}

// readBatch reads the chunks of seqs from the source as entries of x,
// and analyses them.
func (r *Set) readBatch(x *index.OwnerIndex, seqs []uint64) storeBatch {
	entries, err := r.src.Entries(x.Model(), x.Dim(), seqs)
	if err != nil {
		return storeBatch{err: err}
	}
	analysed, err := x.Analyse(entries...)
	return storeBatch{entries: analysed, n: len(entries), err: err}
}
