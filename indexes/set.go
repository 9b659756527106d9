package indexes

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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

	// Index is what the owners' indexes are made and read with: where
	// their vectors live and the process's budget of snapshot maps.
	Index index.Options

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
		x = r.opts.Index.New(r.model, r.dim())
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
	x := r.opts.Index.New(model, dim)
	err = x.Commit(func() error {
		_, err := fn(x)
		return err
	})
	r.setWaiting(owner, nil)
	return err
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
