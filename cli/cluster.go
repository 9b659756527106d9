package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/docsift/docsift/cluster"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/docsift/docsift/store/postgres"
)

// isDatabaseURL reports whether a --store value names a PostgreSQL
// database rather than nothing (the bbolt file in the data dir).
func isDatabaseURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// openStore opens the store the server keeps its records in: the bbolt
// file in the data dir, or with a postgres:// URL the database a cluster
// of nodes shares. The data dir then holds only this node's index
// snapshots and admin socket, so it is locked here instead of by bbolt.
func openStore(storeURL, data string) (st store.Backend, pg *postgres.Store, err error) {
	switch {
	case storeURL == "":
		if isClusterDir(data) {
			return nil, nil, fmt.Errorf("%s is a cluster node's data directory, whose records are in PostgreSQL: pass the cluster's database as --store postgres://… (or DOCSIFT_STORE), or give this server a data directory of its own", data)
		}
		s, err := bolt.Open(data)
		if err != nil {
			return nil, nil, err // not s: a nil *Store would be a non-nil Backend
		}
		return s, nil, nil
	case isDatabaseURL(storeURL):
		if _, err := os.Stat(filepath.Join(data, bolt.DBFileName)); err == nil {
			// Its records would sit unused beside a node's snapshots.
			return nil, nil, fmt.Errorf("%s holds a single server's records (%s), which a cluster node does not read: give the node a data directory of its own (moving a single server's records into PostgreSQL is not supported yet: see docs/cluster.md)", data, bolt.DBFileName)
		}
		unlock, err := lockDataDir(data)
		if err != nil {
			return nil, nil, err
		}
		pg, err := postgres.Open(storeURL)
		if err != nil {
			unlock()
			return nil, nil, err
		}
		return closing{pg, unlock}, pg, nil
	}
	return nil, nil, fmt.Errorf("--store must be empty (the data directory's own file) or a postgres:// URL, not %q", redact.URL(storeURL))
}

// closing is a store that also releases the data dir when closed.
type closing struct {
	*postgres.Store
	unlock func()
}

func (c closing) Close() error {
	defer c.unlock()
	return c.Store.Close()
}

// nodeLockFile is the file a cluster node locks in its data dir.
const nodeLockFile = "node.lock"

// isClusterDir reports whether data is a cluster node's data dir, whose
// records are in PostgreSQL: nothing may make a bbolt store in it (a
// single server there would also take the node's admin socket).
func isClusterDir(data string) bool {
	_, err := os.Stat(filepath.Join(data, nodeLockFile))
	return err == nil
}

// lockDataDir takes the data dir for this process, as bbolt's file lock
// does for a single node: two nodes on one machine need a dir each.
func lockDataDir(data string) (func(), error) {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(data, nodeLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s is in use by another docsift process; give each node its own --data", data)
	}
	return func() { f.Close() }, nil
}

// defaultNodeURL is how other nodes reach this one when --node-url is not
// set: the listening address, with the machine's host name when it listens
// on every interface.
func defaultNodeURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if name, err := os.Hostname(); err == nil {
			host = name
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// rateBucketIdle is how long a rate limit's unused bucket is kept in the
// database (it is full again long before) and how often they are swept;
// every node sweeps, and a sweep is one DELETE.
const rateBucketIdle = 10 * time.Minute

// catchUpRetry is how soon a catch-up that failed is tried again.
const catchUpRetry = time.Second

// clusterMember is this process as a node of a cluster: it joins before
// the engine starts (so that placement counts it before it claims jobs),
// and is tied to the engine once there is one.
type clusterMember struct {
	node   *cluster.Node
	pg     *postgres.Store
	engine atomic.Pointer[ingest.Engine]
	log    *slog.Logger
}

func joinCluster(pg *postgres.Store, url string, log *slog.Logger) (*clusterMember, error) {
	m := &clusterMember{pg: pg, log: log}
	node, err := cluster.Join(pg, url, postgres.HeartbeatInterval, m.placementChanged, log)
	if err != nil {
		return nil, err
	}
	m.node = node
	log.Info("joined the cluster", "node", node.ID(), "url", redact.URL(url), "live_nodes", len(node.Live()))
	return m, nil
}

func (m *clusterMember) placementChanged() {
	if e := m.engine.Load(); e != nil {
		e.PlacementChanged()
	}
}

// run ties the engine to the cluster until ctx ends: other nodes' new and
// ended jobs wake it, and their changes to the chunks of owners it holds
// are caught up, one owner at a time, each change coalesced with those
// that arrive while it waits.
func (m *clusterMember) run(ctx context.Context, e *ingest.Engine) (wait func()) {
	m.engine.Store(e)
	var mu sync.Mutex
	pending := map[string]bool{}
	all := false
	kick := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		t := time.NewTicker(rateBucketIdle)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := m.pg.SweepRateBuckets(rateBucketIdle); err != nil {
					m.log.Warn("removing idle rate-limit buckets failed", "err", err)
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		m.pg.Listen(ctx, m.log, func(owner, from string) {
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
				time.AfterFunc(catchUpRetry, func() {
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

// leave takes the node out of the cluster at a clean shutdown, once its
// workers have stopped.
func (m *clusterMember) leave(ctx context.Context) {
	if err := m.node.Leave(ctx); err != nil {
		m.log.Warn("leaving the cluster failed; the other nodes take over when its heartbeat ages", "err", err)
	}
}
