package cluster

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Store is what a member needs of the store the cluster shares: its
// membership, the notifications of the other nodes' changes, and the
// sweep of the rate limits' idle buckets. The PostgreSQL store
// (store/postgres) is one.
type Store interface {
	Membership
	// Listen calls chunks(owner, node) when node changed owner's chunks
	// and job(id, owner) when one of owner's jobs was queued or ended,
	// until ctx is done; chunks("", "") means that notifications may have
	// been missed, and everything is to be looked at again.
	Listen(ctx context.Context, log *slog.Logger, chunks func(owner, node string), job func(id, owner string))
	SweepRateBuckets(idle time.Duration) (int, error)
}

// Engine is what a member keeps in step with the other nodes: this node's
// indexing engine (ingest.Engine is one).
type Engine interface {
	// PlacementChanged is called when the live nodes changed: owners may
	// have moved to or from this node.
	PlacementChanged()
	// JobsChanged is called when another node queued or ended one of
	// owner's jobs.
	JobsChanged(owner string)
	// CatchUp reads the changes other nodes made to owner's chunks into
	// its index, and CatchUpAll those of every owner held here.
	CatchUp(owner string) error
	CatchUpAll() error
}

// rateBucketIdle is how long a rate limit's unused bucket is kept in the
// store (it is full again long before) and how often they are swept;
// every node sweeps, and a sweep is one DELETE.
const rateBucketIdle = 10 * time.Minute

// catchUpRetry is how soon a catch-up that failed is tried again.
const catchUpRetry = time.Second

// Member is this process as a node of a cluster, tied to its engine. It
// joins before the engine starts (so that placement counts it before it
// claims jobs), and Run ties it to the engine once there is one.
type Member struct {
	node   *Node
	store  Store
	engine atomic.Pointer[Engine]
	log    *slog.Logger

	// How soon a failed catch-up is tried again, and how often idle rate
	// buckets are swept (rateBucketIdle); tests shorten them.
	retry, sweepEvery time.Duration
}

// JoinMember registers this process, reachable by the other nodes at url,
// and heartbeats every interval (see Join).
func JoinMember(st Store, url string, interval time.Duration, log *slog.Logger) (*Member, error) {
	m := &Member{store: st, log: log, retry: catchUpRetry, sweepEvery: rateBucketIdle}
	node, err := Join(st, url, interval, m.placementChanged, log)
	if err != nil {
		return nil, err
	}
	m.node = node
	return m, nil
}

// Node is the member's node: its id, the live nodes, and who holds which
// owner.
func (m *Member) Node() *Node { return m.node }

func (m *Member) placementChanged() {
	if e := m.engine.Load(); e != nil {
		(*e).PlacementChanged()
	}
}

// Run ties the engine to the cluster until ctx ends, and wait returns once
// it has let go: changes of the live nodes reach the engine, other nodes'
// new and ended jobs wake it, and their changes to the chunks of owners it
// holds are caught up, one owner at a time, each change coalesced with
// those that arrive while it waits. Idle rate-limit buckets are swept
// meanwhile.
func (m *Member) Run(ctx context.Context, e Engine) (wait func()) {
	m.engine.Store(&e)
	var mu sync.Mutex
	pending := map[string]bool{}
	all := false
	kick := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		t := time.NewTicker(m.sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := m.store.SweepRateBuckets(rateBucketIdle); err != nil {
					m.log.Warn("removing idle rate-limit buckets failed", "err", err)
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		m.store.Listen(ctx, m.log, func(owner, from string) {
			if from == m.node.ID() {
				return // our own change, already in our index
			}
			mu.Lock()
			if owner == "" {
				all = true
			} else {
				pending[owner] = true
			}
			mu.Unlock()
			select {
			case kick <- struct{}{}:
			default:
			}
		}, func(_, owner string) { e.JobsChanged(owner) })
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			mu.Lock()
			owners, everyone := pending, all
			pending, all = map[string]bool{}, false
			mu.Unlock()
			failed := false
			if everyone {
				if err := e.CatchUpAll(); err != nil {
					m.log.Warn("catching up with other nodes' changes failed; trying again", "err", err)
					mu.Lock()
					all, failed = true, true
					mu.Unlock()
				}
			} else {
				for owner := range owners {
					if err := e.CatchUp(owner); err != nil {
						m.log.Warn("catching up with another node's change failed; trying again", "owner", owner, "err", err)
						mu.Lock()
						pending[owner], failed = true, true
						mu.Unlock()
					}
				}
			}
			if failed {
				// The store is likely down a moment: look again soon,
				// notification or not.
				time.AfterFunc(m.retry, func() {
					select {
					case kick <- struct{}{}:
					default:
					}
				})
			}
		}
	}()
	return wg.Wait
}

// Leave takes the node out of the cluster at a clean shutdown; call it
// once its workers have stopped.
func (m *Member) Leave(ctx context.Context) {
	if err := m.node.Leave(ctx); err != nil {
		m.log.Warn("leaving the cluster failed; the other nodes take over when its heartbeat ages", "err", err)
	}
}
