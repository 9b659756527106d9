package cluster

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/docsift/docsift/store"
)

// Membership is what a node needs of the cluster's store: to join, to
// heartbeat, to see the live nodes, and to leave. The PostgreSQL store
// (store/postgres) is one.
type Membership interface {
	Join(url string) (id, secret string, err error)
	Heartbeat() error
	LiveNodes() ([]store.Node, error)
	Leave() error
}

// Node is this process as a member of the cluster. It heartbeats, keeps
// the list of live nodes, and says which of them holds an owner.
type Node struct {
	members  Membership
	self     store.Node
	secret   string
	interval time.Duration
	log      *slog.Logger

	mu       sync.RWMutex
	live     []store.Node // by id; always includes self while running
	beatErr  error        // the last heartbeat's failure; nil once one succeeds
	beatFrom time.Time    // when the heartbeats began to fail

	changed func() // called after the live nodes changed
	stop    chan struct{}
	done    chan struct{}
}

// Join registers this process, reachable by the others at url, and starts
// heartbeating every interval. changed, if not nil, is called (from the
// heartbeat goroutine) whenever the set of live nodes changes: owners may
// have moved.
func Join(members Membership, url string, interval time.Duration, changed func(), log *slog.Logger) (*Node, error) {
	id, secret, err := members.Join(url)
	if err != nil {
		return nil, err
	}
	n := &Node{members: members, self: store.Node{ID: id, URL: url}, secret: secret, interval: interval, log: log,
		changed: changed, stop: make(chan struct{}), done: make(chan struct{})}
	n.refresh()
	go n.beat()
	return n, nil
}

// ID is this node's id.
func (n *Node) ID() string { return n.self.ID }

// Secret is the cluster's secret, with which nodes mark the requests they
// pass to one another.
func (n *Node) Secret() string { return n.secret }

// Live returns the live nodes as last seen, by id.
func (n *Node) Live() []store.Node {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.live
}

// Unreachable returns, when this node's heartbeats fail (the database
// cannot be reached), the last failure and since when; nil otherwise.
func (n *Node) Unreachable() (since time.Time, err error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.beatFrom, n.beatErr
}

// Holder returns the node that holds owner's index, and whether that is
// this node.
func (n *Node) Holder(owner string) (store.Node, bool) {
	h, ok := Holder(owner, n.Live())
	if !ok {
		return n.self, true
	}
	return h, h.ID == n.self.ID
}

// Holds reports whether this node holds owner's index.
func (n *Node) Holds(owner string) bool {
	_, self := n.Holder(owner)
	return self
}

func (n *Node) beat() {
	defer close(n.done)
	t := time.NewTicker(n.interval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			err := n.members.Heartbeat()
			n.mu.Lock()
			if err != nil && n.beatErr == nil {
				n.beatFrom = time.Now()
			}
			n.beatErr = err
			n.mu.Unlock()
			if err != nil {
				// Keep the last list: a node cut off from the database
				// cannot learn placement, and its peers will see it
				// silent and move its owners away.
				n.log.Warn("cluster heartbeat failed", "err", err)
				continue
			}
			n.refresh()
		}
	}
}

// refresh reads the live nodes and calls changed when they differ from the
// last list.
func (n *Node) refresh() {
	live, err := n.members.LiveNodes()
	if err != nil {
		n.log.Warn("reading the cluster's live nodes failed", "err", err)
		return
	}
	if !slices.ContainsFunc(live, func(m store.Node) bool { return m.ID == n.self.ID }) {
		// Our heartbeat is recorded but not yet counted (or we stalled):
		// we are alive, so we are a member.
		live = append(live, n.self)
		slices.SortFunc(live, func(a, b store.Node) int { return cmp.Compare(a.ID, b.ID) })
	}
	n.mu.Lock()
	was := n.live
	n.live = live
	n.mu.Unlock()
	if !slices.Equal(was, live) {
		if was != nil {
			n.log.Info("cluster nodes changed", "live", len(live))
		}
		if n.changed != nil {
			n.changed()
		}
	}
}

// Leave stops heartbeating and removes the node from the cluster; call it
// once this node no longer runs jobs.
func (n *Node) Leave(ctx context.Context) error {
	close(n.stop)
	select {
	case <-n.done:
	case <-ctx.Done():
	}
	return n.members.Leave()
}
