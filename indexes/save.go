package indexes

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/internal/runtimepolicy"
)

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
		runtimepolicy.ReturnMemory()
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
// (runtimepolicy.ReturnMemory, a collection: not with mu held) rather than as the
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
