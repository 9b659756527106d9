package indexes

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/store"
)

// Source is what a Set reads besides its snapshots: the store, which is
// the source of truth an owner's index is caught up with. Every
// store.Backend has the first three; Entries is the indexing pipeline's,
// which knows what it put in an entry of each chunk it wrote.
type Source interface {
	// OwnerSeqs lists the sequences of an owner's chunks, ascending.
	OwnerSeqs(owner string) ([]uint64, error)
	// OwnerModel is the model and dimension of an owner's vectors,
	// store.ErrNotFound while it has none.
	OwnerModel(owner string) (*store.OwnerModel, error)
	// MissingVectors lists the owner's chunks with no vector of model.
	MissingVectors(owner, model string) ([]uint64, error)
	// Entries reads the chunks of seqs as entries of an index of model
	// and dim: a chunk with no vector yet has a zero vector of dim, one
	// deleted meanwhile no entry.
	Entries(model string, dim int, seqs []uint64) ([]index.Entry, error)
}

// Options tune a Set. The zero value of each field takes its default.
type Options struct {
	// Holds, in a cluster, reports whether this node holds an owner's
	// index (see package cluster); nil: every owner's, as a single node.
	// The set then keeps only those owners' indexes (see Evict).
	Holds func(owner string) bool

	// CatchUpInline and CatchUpWait bound the chunks a load adds before
	// the owner is searchable (see the consts of those names); negative:
	// none.
	CatchUpInline int
	CatchUpWait   time.Duration
	// SnapshotGrowth is how many entries the owners may gain, all
	// together, before they are saved at once (see the const).
	SnapshotGrowth int
	// PreviewSegmentBytes is the size of an owner's segments from which
	// a load searches its snapshot alone first (see the const).
	PreviewSegmentBytes int64

	// Go runs the set's background work: the catch-up that follows a
	// load, the load behind a preview, and the saves once the owners
	// grew. nil: each on a goroutine of its own; a caller may hold,
	// bound or wait for them.
	Go func(task func())
	// Saving, when set, is called while an owner's snapshot or segment
	// is written, with the owner's commits free to run (see save).
	Saving func(owner string)
}

func (o Options) withDefaults() Options {
	if o.CatchUpInline == 0 {
		o.CatchUpInline = catchUpInline
	}
	o.CatchUpInline = max(o.CatchUpInline, 0)
	if o.CatchUpWait == 0 {
		o.CatchUpWait = catchUpWait
	}
	o.CatchUpWait = max(o.CatchUpWait, 0)
	if o.SnapshotGrowth <= 0 {
		o.SnapshotGrowth = snapshotGrowth
	}
	if o.PreviewSegmentBytes <= 0 {
		o.PreviewSegmentBytes = previewSegmentBytes
	}
	if o.Go == nil {
		o.Go = func(task func()) { go task() }
	}
	return o
}

// Set holds the in-memory index of every owner that has been used since
// start-up. An owner's index is loaded on first use from its snapshot in
// its directory and caught up with the Source, which is the source of
// truth: a snapshot only saves re-reading and re-inserting every vector.
type Set struct {
	src   Source
	dir   string
	model string     // embedder of owners that have no vectors yet
	dim   func() int // its dimension: a model server's is learnt once it answers
	opts  Options
	log   *slog.Logger

	mu     sync.Mutex
	owners map[string]*ownerIndex

	// waiting holds, per owner, the sequences of the chunks its index
	// holds without a vector yet (see NoteWaiting). It has a lock of its
	// own, held only to read or change it, because searches count it.
	waitMu  sync.Mutex
	waiting map[string]map[uint64]bool
	// catchingUp holds, per owner whose index was loaded from a snapshot
	// that lacked many of its chunks, how many are still being added
	// (see load); under waitMu.
	catchingUp map[string]int
	// unsaved is how many entries the owners gained since their last
	// saves, all together (the sum of their ownerIndex.unsaved); growing
	// is set while the saves it caused run (see saveWhenGrown).
	unsaved atomic.Int64
	growing atomic.Bool
	// behindPreviews lets one load behind a preview run at a time: on a
	// start, every large owner's preview comes first, then their whole
	// indexes one after another rather than all at once.
	behindPreviews chan struct{}
}

// ownerIndex is one owner's index and its bookkeeping. mu is the commit
// lock: it serialises loading and the changes that must reach the store and
// the index together (a job's commit, a delete), so the two never disagree.
// Searches do not take it once the index is loaded: they read ready, and
// the index itself lets them read its last published version while a
// commit runs.
type ownerIndex struct {
	ready atomic.Pointer[index.OwnerIndex] // x once loaded, read without mu

	// loadMu is held, before mu, by whoever loads the index. A search
	// that finds it not loaded waits on loadMu, not mu: the load publishes
	// the index as soon as it is searchable and hands mu to its catch-up,
	// which may hold it for many seconds, and a search queued on mu could
	// get it only after that (see lockLoaded).
	loadMu sync.Mutex
	// saveMu is held, before mu, by whoever saves the index: saves take
	// turns, and one whose write leaves mu to commits (see snapshot) is
	// not overtaken by another.
	saveMu sync.Mutex

	mu      sync.Mutex
	loaded  bool
	x       *index.OwnerIndex
	dirty   bool   // changed since the last snapshot
	lastSeq uint64 // highest chunk sequence the index holds
	// saved is how many entries the index had at its last snapshot (or
	// load), and unsaved how many it has gained since, as last counted in
	// Set.unsaved.
	saved, unsaved int
}

// set makes x the owner's index for commits and searches; the caller holds
// mu.
func (e *ownerIndex) set(x *index.OwnerIndex) {
	e.x = x
	e.ready.Store(x)
}

// New returns a set whose new owners take vectors of model and dim; an
// owner with vectors keeps the model src records for it. Snapshots live
// in dir. It removes the temp files of snapshots that a crash
// interrupted: the caller has the data dir locked, so no snapshot is
// being written there.
func New(src Source, dir, model string, dim func() int, opts Options, log *slog.Logger) *Set {
	if n, err := index.RemoveStaleTemps(dir); err != nil {
		log.Warn("could not remove the temp files of interrupted snapshots", "err", err)
	} else if n > 0 {
		log.Info("removed the temp files of interrupted snapshots", "files", n)
	}
	return &Set{src: src, dir: dir, model: model, dim: dim, opts: opts.withDefaults(), log: log,
		owners: map[string]*ownerIndex{}, waiting: map[string]map[uint64]bool{}, catchingUp: map[string]int{}, behindPreviews: make(chan struct{}, 1)}
}

// Holds reports whether this node holds an owner's index (Options.Holds):
// every owner's on a single node.
func (r *Set) Holds(owner string) bool { return r.opts.Holds == nil || r.opts.Holds(owner) }

// loadedEntry returns the owner's entry when its index is loaded, else nil.
func (r *Set) loadedEntry(owner string) *ownerIndex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.owners[owner]; e != nil && e.ready.Load() != nil {
		return e
	}
	return nil
}

func (r *Set) entry(owner string) *ownerIndex {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.owners[owner]
	if e == nil {
		e = &ownerIndex{}
		r.owners[owner] = e
	}
	return e
}

// Get returns an owner's index, loading it on first use. Once the owner is
// loaded it takes no lock a commit holds, so a search never waits for one.
func (r *Set) Get(owner string) (*index.OwnerIndex, error) {
	e := r.entry(owner)
	if x := e.ready.Load(); x != nil {
		return x, nil
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	if x := e.ready.Load(); x != nil {
		return x, nil // loaded by whoever held loadMu
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := r.load(owner, e); err != nil {
		return nil, err
	}
	return e.ready.Load(), nil // a preview, maybe: see preview
}

// lockLoaded takes e's commit lock with the owner's index loaded; the
// caller unlocks e.mu when it returns nil. A load happens under loadMu
// too, so that searches waiting for it are not queued on mu behind the
// catch-up the load may start.
func (r *Set) lockLoaded(owner string, e *ownerIndex) error {
	e.mu.Lock()
	if e.loaded {
		return nil
	}
	e.mu.Unlock()
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.mu.Lock()
	if err := r.load(owner, e); err != nil {
		e.mu.Unlock()
		return err
	}
	return nil
}

// Update runs fn with the owner's index while holding the owner's commit
// lock: fn writes to the store and then applies the same change to the
// index, and no other update of that owner interleaves. Searches see
// everything fn changes in the index at once, when fn returns.
func (r *Set) Update(owner string, fn func(x *index.OwnerIndex) (lastSeq uint64, err error)) error {
	if !r.Holds(owner) && r.loadedEntry(owner) == nil {
		return r.updateElsewhere(owner, fn)
	}
	e := r.entry(owner)
	if err := r.lockLoaded(owner, e); err != nil {
		return err
	}
	defer e.mu.Unlock()
	x := e.x
	if x.Len() == 0 && x.Dim() == 0 && x.Model() == r.model {
		// Made while the model server was down and its dimension unknown.
		x = index.New(r.model, r.dim())
		e.set(x)
	}
	var seq uint64
	err := x.Commit(func() error {
		var err error
		seq, err = fn(x)
		return err
	})
	e.dirty = true
	e.lastSeq = max(e.lastSeq, seq)
	r.counted(e)
	r.saveWhenGrown()
	return err
}

// snapshotGrowth is how many entries the owners' indexes may gain, all
// together, after they were last saved before they are saved at once
// instead of at the next period (see saveWhenGrown): this bounds what a
// crash leaves to catch up from the store (0.3-0.6 ms a chunk at a
// million) and what the heap holds beyond the snapshots. A save appends a
// segment of the changes since the last, so saving often costs what
// changed, not the owner's size, until the index writes the whole
// snapshot again, which moves its heap onto the file (see
// index.OwnerIndex.Save); an owner never saved is saved whole.
const snapshotGrowth = 10000

// counted brings Set.unsaved up to date with what e gained since its
// last save; the caller holds e.mu.
func (r *Set) counted(e *ownerIndex) {
	gained := 0
	if e.x != nil {
		gained = max(e.x.Len()-e.saved, 0)
	}
	r.unsaved.Add(int64(gained - e.unsaved))
	e.unsaved = gained
}

// saveWhenGrown saves every changed owner, in the background, once the
// owners gained snapshotGrowth entries since their saves, all together:
// a thousand customers' owners of a hundred chunks each stay far below
// it, and counted one by one, they held 1.5 GB of heap for their 100,000
// chunks until the period came (15 KB a chunk, most of it the terms of a
// lexicon not yet on its file: 15 GB at that rate for a million chunks
// over ten thousand customers). A pass runs at a time.
func (r *Set) saveWhenGrown() {
	if r.unsaved.Load() < int64(r.opts.SnapshotGrowth) || !r.growing.CompareAndSwap(false, true) {
		return
	}
	r.opts.Go(func() {
		defer r.growing.Store(false)
		if err := r.Snapshot(); err != nil {
			r.log.Error("index snapshot failed", "err", err)
		}
	})
}

// updateElsewhere is Update for an owner whose index another node holds
// and this one has not loaded (a document deleted through this node, a job
// that was running here when the owner moved): fn writes to the store as
// always and applies its change to an empty index that is then dropped.
// The holder hears of the change from the store and catches up.
func (r *Set) updateElsewhere(owner string, fn func(x *index.OwnerIndex) (uint64, error)) error {
	model, dim, err := r.ownerModel(owner)
	if err != nil {
		return fmt.Errorf("indexes: update %s: %w", owner, err)
	}
	x := index.New(model, dim)
	err = x.Commit(func() error {
		_, err := fn(x)
		return err
	})
	r.setWaiting(owner, nil)
	return err
}

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

func (r *Set) loadedOwners() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	owners := make([]string, 0, len(r.owners))
	for o, e := range r.owners {
		if e.ready.Load() != nil {
			owners = append(owners, o)
		}
	}
	return owners
}

// Evict snapshots and drops the indexes of the owners this node no longer
// holds (a node joined and won them, or this one answered for a dead
// holder); they load again should they come back.
func (r *Set) Evict() {
	if r.opts.Holds == nil {
		return
	}
	for _, owner := range r.loadedOwners() {
		if r.Holds(owner) {
			continue
		}
		r.mu.Lock()
		e := r.owners[owner]
		r.mu.Unlock()
		e.saveMu.Lock()
		e.mu.Lock()
		if e.loaded && e.dirty {
			// The directory may not exist yet: no save has run since
			// start, and with vectors in the heap nothing made it.
			err := os.MkdirAll(r.dir, 0o700)
			if err == nil {
				_, err = e.x.Save(r.path(owner), e.lastSeq)
			}
			if err != nil {
				r.log.Warn("snapshot of an index that moved to another node failed", "owner", owner, "err", err)
			}
		}
		r.mu.Lock()
		if r.owners[owner] == e {
			delete(r.owners, owner)
		}
		r.mu.Unlock()
		r.unsaved.Add(-int64(e.unsaved)) // no longer counted
		e.unsaved = 0
		e.mu.Unlock()
		e.saveMu.Unlock()
		r.setWaiting(owner, nil)
		r.log.Info("index moved to another node", "owner", owner)
	}
}

// Replace swaps an owner's index for the one fn returns, under the owner's
// commit lock. Searches that started on the old index finish on it.
func (r *Set) Replace(owner string, fn func(old *index.OwnerIndex) (*index.OwnerIndex, error)) error {
	e := r.entry(owner)
	if err := r.lockLoaded(owner, e); err != nil {
		return err
	}
	defer e.mu.Unlock()
	x, err := fn(e.x)
	if err != nil {
		return err
	}
	waiting, err := r.src.MissingVectors(owner, x.Model())
	if err != nil {
		return err
	}
	e.set(x)
	e.dirty = true
	r.setWaiting(owner, waiting)
	return nil
}

// NoteWaiting records that an owner's index now holds the chunks of add
// without a vector, and no longer holds those of done (deleted, or added
// again with their vector under a new sequence).
func (r *Set) NoteWaiting(owner string, add, done []uint64) {
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	w := r.waiting[owner]
	if w == nil && len(add) == 0 {
		return
	}
	if w == nil {
		w = map[uint64]bool{}
		r.waiting[owner] = w
	}
	for _, s := range done {
		delete(w, s)
	}
	for _, s := range add {
		w[s] = true
	}
	if len(w) == 0 {
		delete(r.waiting, owner)
	}
}

// setWaiting replaces what NoteWaiting recorded for an owner.
func (r *Set) setWaiting(owner string, seqs []uint64) {
	r.waitMu.Lock()
	delete(r.waiting, owner)
	r.waitMu.Unlock()
	r.NoteWaiting(owner, seqs, nil)
}

// Waiting returns how many chunks an owner's index holds without a vector.
func (r *Set) Waiting(owner string) int {
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	return len(r.waiting[owner])
}

func (r *Set) path(owner string) string {
	return filepath.Join(r.dir, filepath.Base(owner)+".idx")
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
	x, lastSeq, err := index.ReadSnapshotAfter(r.path(owner), e.ready.Load())
	read := time.Since(start)
	fromSnapshot := false
	switch {
	case err == nil && (x.Model() != model || x.Dim() != dim):
		r.log.Warn("index snapshot is of another embedding model, rebuilding from the store", "owner", owner, "snapshot_model", x.Model(), "model", model)
		x, lastSeq = index.New(model, dim), 0
	case err == nil:
		fromSnapshot = true
		if serr := x.SkippedSegment(); serr != nil {
			r.log.Warn("index snapshot read without its segment; the changes it held are caught up from the store", "owner", owner, "err", serr)
		}
	case errors.Is(err, fs.ErrNotExist):
		x = index.New(model, dim)
	case errors.Is(err, index.ErrOtherVersion):
		r.log.Info("index snapshot is of another docsift version, rebuilding it from the store", "owner", owner, "err", err)
		x, lastSeq = index.New(model, dim), 0
	default:
		r.log.Warn("index snapshot unusable, rebuilding from the store", "owner", owner, "err", err)
		x, lastSeq = index.New(model, dim), 0
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
	x, _, err := index.ReadSnapshotAlone(path)
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
		debug.FreeOSMemory()
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

// setCatchingUp records how many of an owner's chunks a load is still
// adding to its index.
func (r *Set) setCatchingUp(owner string, n int) {
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	if n == 0 {
		delete(r.catchingUp, owner)
		return
	}
	r.catchingUp[owner] = n
}

// CatchingUp returns how many of an owner's chunks are not searchable yet
// because its index is still catching up with the store after a load.
func (r *Set) CatchingUp(owner string) int {
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	return r.catchingUp[owner]
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
	// The next batch is read from the store and cut into terms while the
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

// Snapshot saves every changed index to disk, as a segment where it can
// (see index.OwnerIndex.Save). It is called periodically; an error leaves
// what was saved before in place.
func (r *Set) Snapshot() error { return r.snapshotAll(false) }

// SnapshotWhole writes the whole snapshot of every index changed since, or
// saved in segments beside, its last one, at shutdown:
// the next start then reads one file in place, holding nothing in the
// heap, and answers sooner than after applying segments (at 100,000
// chunks, 0.22 s against 0.92 s, and 800 bytes a chunk of memory against
// 3,200), at the cost of a slower stop for a large owner.
func (r *Set) SnapshotWhole() error { return r.snapshotAll(true) }

func (r *Set) snapshotAll(whole bool) error {
	r.mu.Lock()
	owners := make(map[string]*ownerIndex, len(r.owners))
	for o, e := range r.owners {
		owners[o] = e
	}
	r.mu.Unlock()
	// The periodic passes save one owner at a time, beside searches and
	// uploads (four at a time made a multi-tenant ingest slower and its
	// heap larger). A stop (whole) has nothing else to do, and much of a
	// small owner's save is waiting for its fsyncs: eight at a time took
	// the stop of 3,000 customers from 7.5-8.6 s to 5.6-5.7.
	workers := 1
	if whole {
		workers = stopSaveWorkers
	}
	var (
		mu    sync.Mutex
		errs  []error
		moved bool
		wg    sync.WaitGroup
	)
	slots := make(chan struct{}, workers)
	for owner, e := range owners {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			saved, err := r.snapshot(owner, e, whole)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			moved = moved || saved != nil && saved.Whole
		}()
	}
	wg.Wait()
	if moved {
		// Once for all of them: a collection after each owner made a
		// stop with a thousand customers take 12-37 s, one a second.
		debug.FreeOSMemory()
	}
	return errors.Join(errs...)
}

// stopSaveWorkers is how many owners a stop saves at once.
const stopSaveWorkers = 8

// snapshot saves an owner's index to disk if it changed since it was
// last saved: a segment of the changes since the last save, unless whole
// or the index writes the whole (see index.OwnerIndex.Save). Commits do
// not wait while either is written (the whole snapshot at a million
// chunks takes up to tens of seconds, a segment half a second): mu is
// left to them (see index.SaveWrite), and the file holds the chunks up to
// the lastSeq read when the save started, those after it being caught up
// from the store after a crash. It returns what it saved, nil for
// nothing. After a whole snapshot the index has moved onto the file, so
// the caller gives the heap it held back to the system at once
// (debug.FreeOSMemory, a collection: not with mu held) rather than as the
// runtime's scavenger gets round to it.
func (r *Set) snapshot(owner string, e *ownerIndex, whole bool) (*index.Saved, error) {
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	start := time.Now()
	saved, entries, err := r.save(owner, e, whole)
	if err != nil || saved == nil {
		return nil, err
	}
	r.log.Info("index saved", "owner", owner, "entries", entries, "whole", saved.Whole, "segment", saved.Segment,
		"mb", float64(saved.Bytes)/(1<<20), "ms", time.Since(start).Milliseconds(), "held_ms", saved.Held.Milliseconds())
	return saved, nil
}

// save is snapshot under e.mu, which it leaves to commits while the
// snapshot or its segment is written; it returns what it saved (nil:
// nothing to save) and the index's entries.
func (r *Set) save(owner string, e *ownerIndex, whole bool) (*index.Saved, int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.loaded || !e.dirty && !(whole && e.x.Segments() > 0) {
		return nil, 0, nil
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("indexes: snapshot: %w", err)
	}
	// No Commit runs while mu is held: the save starts from the version
	// with every change up to lastSeq, and keeps apart the changes made
	// while it is written (see index.SaveWrite).
	x := e.x
	w := x.StartSave(r.path(owner), e.lastSeq, whole)
	e.dirty, e.saved = false, x.Len()
	r.counted(e)
	e.mu.Unlock()
	if r.opts.Saving != nil {
		r.opts.Saving(owner)
	}
	w.Write()
	e.mu.Lock()
	saved, err := w.Finish()
	if err != nil || e.x != x {
		e.dirty = true // to save again, or the index that replaced x
	}
	if err != nil {
		return nil, 0, fmt.Errorf("indexes: snapshot %s: %w", owner, err)
	}
	return &saved, x.Len(), nil
}

// Sizes returns the number of chunks in each loaded owner's index, as its
// searches see it now; for metrics, which count owners by size rather than
// name them.
func (r *Set) Sizes() []int {
	r.mu.Lock()
	owners := make([]*ownerIndex, 0, len(r.owners))
	for _, e := range r.owners {
		owners = append(owners, e)
	}
	r.mu.Unlock()
	sizes := make([]int, 0, len(owners))
	for _, e := range owners {
		if x := e.ready.Load(); x != nil {
			sizes = append(sizes, x.Len())
		}
	}
	return sizes
}

// Memory reports what the loaded indexes hold, summed over owners, by
// part and memory ("heap" or "mapped"; see index.MemoryPart).
func (r *Set) Memory(emit func(part, memory string, bytes int64)) {
	r.mu.Lock()
	owners := make([]*ownerIndex, 0, len(r.owners))
	for _, e := range r.owners {
		owners = append(owners, e)
	}
	r.mu.Unlock()
	var sum []index.MemoryPart
	for _, e := range owners {
		x := e.ready.Load()
		if x == nil {
			continue
		}
		parts := x.Memory()
		if sum == nil {
			sum = parts
			continue
		}
		for i, p := range parts {
			sum[i].Heap += p.Heap
			sum[i].Mapped += p.Mapped
		}
	}
	for _, p := range sum {
		emit(p.Part, "heap", p.Heap)
		emit(p.Part, "mapped", p.Mapped)
	}
}
