package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// A store joined to a cluster (Join) is one node among several sharing the
// database. Jobs are then leased: a node renews the leases of the jobs it
// runs with every heartbeat, and a job whose lease ran out (its node died)
// is queued again by whichever node claims next. Each node claims only the
// jobs of the owners placed on it (see placement), so an owner's chunks
// are written by the node that holds its index.

// Channels on which transactions notify, delivered at commit and not at all
// on rollback. chunksChannel's payload is "<owner> <node>" (node: the
// writing node's id, empty outside a cluster): the node holding the owner's
// index catches up from the store when it hears it. jobsChannel's payload
// is "<job> <owner>": a job was queued or ended, so the owner's holder
// looks for work and waiters look again. Notifications are only wake-ups; the rows are the truth, so a
// lost one delays work but never loses it.
const (
	chunksChannel = "docsift_chunks"
	jobsChannel   = "docsift_jobs"
)

// notifyChunks queues the notification that owner's chunks changed.
func (s *Store) notifyChunks(ctx context.Context, tx pgx.Tx, owner string) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", chunksChannel, owner+" "+s.node)
	return err
}

// notifyJob queues the notification that a job of owner was queued or
// ended.
func (s *Store) notifyJob(ctx context.Context, tx pgx.Tx, jobID, owner string) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", jobsChannel, jobID+" "+owner)
	return err
}

// Cluster timing. A node heartbeats every HeartbeatInterval and counts as
// live while its last heartbeat is younger than liveFor; a job's lease
// lasts jobLease and is renewed with each heartbeat. So a node that dies
// loses its owners after at most liveFor and its jobs after at most
// jobLease; one that stalls longer than that (a long GC pause, a frozen
// VM) loses them too, and finds its late writes refused.
const (
	HeartbeatInterval = 2 * time.Second
	liveFor           = 3 * HeartbeatInterval
	jobLease          = 5 * HeartbeatInterval
)

// placedHereArg is the SQL condition that the owner of the job row j is
// placed on node $arg: of the live nodes, the one with the highest
// md5(owner || ' ' || node id) holds it (rendezvous hashing; the cluster
// package computes the same in Go). It is evaluated for every queued job a
// claim walks past, so it compares this node's weight with the others'
// (three MD5s for three nodes, no sort), over the live nodes read once per
// statement.
func placedHereArg(arg int) string {
	return fmt.Sprintf(`md5(j.owner_id || ' ' || $%d) COLLATE "C" >= ALL (
		SELECT md5(j.owner_id || ' ' || l) COLLATE "C" FROM unnest((SELECT array_agg(id) FROM nodes
			WHERE heartbeat_at > now() - make_interval(secs => %g))) l)`, arg, liveFor.Seconds())
}

// leases is the set of jobs this node runs, whose leases its heartbeats
// renew. A job leaves it when it ends or is retried, or when recording
// that failed: its lease then runs out and another claim runs it again,
// as a restart would on bbolt.
type leases struct {
	mu   sync.Mutex
	jobs map[string]bool
}

func (l *leases) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.jobs == nil {
		l.jobs = map[string]bool{}
	}
	l.jobs[id] = true
}

func (l *leases) remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.jobs, id)
}

func (l *leases) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.jobs))
	for id := range l.jobs {
		ids = append(ids, id)
	}
	return ids
}

// ErrLeaseLost is returned when a node records the outcome of a job whose
// lease it no longer holds: another node has taken the job over, and its
// outcome is the one that counts.
var ErrLeaseLost = errors.New("the job was taken over by another node after its lease ran out")

// Join makes the store a node of the cluster, reachable by the other nodes
// at url, under a new id, and records its first heartbeat. Call it before
// the first ClaimJob; then Heartbeat every HeartbeatInterval.
//
// It also returns the cluster's secret, with which nodes mark the requests
// they pass to one another; the first node to join makes it.
func (s *Store) Join(url string) (id, secret string, err error) {
	if s.node != "" {
		return "", "", fmt.Errorf("postgres: already joined as %s", s.node)
	}
	id = store.NewID("node_")
	ctx, cancel := opContext()
	defer cancel()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO cluster_secret (id, secret) VALUES (1, $1) ON CONFLICT DO NOTHING`,
			store.NewSecret("node_secret_")); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT secret FROM cluster_secret").Scan(&secret); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO nodes (id, url, started_at, heartbeat_at) VALUES ($1, $2, now(), now())`, id, url)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("postgres: join the cluster: %w", err)
	}
	s.node, s.url = id, url
	return id, secret, nil
}

// Heartbeat records that this node is alive and renews the leases of the
// jobs it runs. Nodes silent for an hour are forgotten.
func (s *Store) Heartbeat() error {
	ctx, cancel := opContext()
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE nodes SET heartbeat_at = now() WHERE id = $1", s.node)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 { // forgotten after a long stall: register again
			if _, err := tx.Exec(ctx, "INSERT INTO nodes (id, url, started_at, heartbeat_at) VALUES ($1, $2, now(), now())", s.node, s.url); err != nil {
				return err
			}
		}
		if ids := s.leases.list(); len(ids) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE jobs SET lease_until = now() + make_interval(secs => $3)
				WHERE id = ANY($1) AND node_id = $2 AND status = 'PROCESSING'`, ids, s.node, jobLease.Seconds()); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "DELETE FROM nodes WHERE heartbeat_at < now() - interval '1 hour'")
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: heartbeat: %w", err)
	}
	return nil
}

// LiveNodes returns the nodes whose last heartbeat is recent, by id.
func (s *Store) LiveNodes() ([]store.Node, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, url FROM nodes WHERE heartbeat_at > now() - make_interval(secs => $1) ORDER BY id`, liveFor.Seconds())
	if err != nil {
		return nil, fmt.Errorf("postgres: live nodes: %w", err)
	}
	nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Node, error) {
		var n store.Node
		return n, r.Scan(&n.ID, &n.URL)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: live nodes: %w", err)
	}
	return nodes, nil
}

// Leave removes this node from the cluster at a clean shutdown, once its
// workers have stopped: its owners move to the other nodes at their next
// look, and the jobs it still held are queued again at once rather than
// when their leases run out.
func (s *Store) Leave() error {
	ctx, cancel := opContext()
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM nodes WHERE id = $1", s.node); err != nil {
			return err
		}
		// Queued again at once, not left to a lease running out, which
		// would count as an interruption (see requeueInterrupted): a node
		// leaving cleanly has not crashed on them.
		_, err := tx.Exec(ctx, `WITH j AS (
				UPDATE jobs SET status = $2, updated_at = $3, due_at = $3, queue_seq = nextval('job_queue_seq'),
					pages_done = NULL, pages = NULL, node_id = NULL, lease_until = NULL
				WHERE node_id = $1 AND status = $4 RETURNING document_id)
			UPDATE documents SET status = $2, updated_at = $3 WHERE id IN (SELECT document_id FROM j)`,
			s.node, store.StatusPending, s.timestamp(), store.StatusProcessing)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: leave the cluster: %w", err)
	}
	return nil
}

// Listen calls chunks(owner, node) for every notification that an owner's
// chunks changed and job(id, owner) for every job queued or ended, until
// ctx is done. It holds a connection of its own; when that is lost it
// reconnects, and then calls chunks("", "") and job("", ""):
// notifications may have been missed meanwhile, so listeners should look at
// everything again.
func (s *Store) Listen(ctx context.Context, log *slog.Logger, chunks func(owner, node string), job func(id, owner string)) {
	backoff := 100 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			chunks("", "")
			job("", "")
		}
		err := s.listenOnce(ctx, chunks, job, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		log.Warn("lost the connection that hears other nodes' changes; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, chunks func(owner, node string), job func(id, owner string), connected func()) error {
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection would stay in LISTEN state: it is taken from the pool
	// for good and closed at the end.
	conn := pooled.Hijack()
	defer conn.Close(context.Background())
	for _, ch := range []string{chunksChannel, jobsChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case chunksChannel:
			owner, node, _ := strings.Cut(n.Payload, " ")
			chunks(owner, node)
		case jobsChannel:
			id, owner, _ := strings.Cut(n.Payload, " ")
			job(id, owner)
		}
	}
}
