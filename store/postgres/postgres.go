// Package postgres keeps docsift's durable state in PostgreSQL, for the
// cluster mode where several docsift nodes share one database (see
// docs/cluster.md). It implements store.Backend with store's
// records (store.Project, store.APIKey, …) and errors (store.ErrNotFound),
// and a shared conformance suite (store/storetest) holds both to the same
// behaviour. Beyond that it has what a cluster needs (cluster.go): nodes
// and their heartbeats, job leases, notifications of changed chunks and
// jobs, and rate-limit buckets shared by the nodes (ratelimit.go).
//
// It lives under store/ beside store/bolt because both implement that
// package's contract: they reuse store's records, id helpers and the
// rules written once there (store/rules.go), while store itself stays
// free of either driver.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docsift/docsift/store"
)

// opTimeout bounds one store call, so that a request made while
// PostgreSQL is unreachable fails with an error instead of hanging.
const opTimeout = 10 * time.Second

var _ store.Backend = (*Store)(nil)

// Store is docsift's state in PostgreSQL. It is safe for concurrent use,
// also by several processes on one database.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time

	// In a cluster (see cluster.go): this node's id ("" until Join), the
	// URL it is reached at, and the jobs it holds leases on.
	node   string
	url    string
	leases leases

	// maxInterrupted is the interruptions after which a job fails (see
	// RequeueInterrupted), for the jobs found by their lease.
	maxInterrupted atomic.Int64

	// customersScan is how many customers a find reads at a time
	// (defaultCustomersScan).
	customersScan int
}

// Open connects to the database at url (postgres://…) and migrates its
// schema to this build's version.
func Open(url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse database URL: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		if store.Unavailable(err) || errors.Is(err, context.DeadlineExceeded) {
			// Migrating is the first use of the connection, whatever
			// the command: say what failed in an operator's words.
			return nil, fmt.Errorf("the database %s on %s:%d is unreachable (is PostgreSQL running there, and the URL right?): %w", cfg.ConnConfig.Database, cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
		}
		return nil, fmt.Errorf("postgres: migrate %s: %w", cfg.ConnConfig.Database, err)
	}
	s := &Store{pool: pool, now: time.Now, customersScan: defaultCustomersScan}
	s.maxInterrupted.Store(store.DefaultMaxInterrupted)
	return s, nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// SetClock replaces the clock; tests use it to move time forward.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Now is the store's clock, the one expiry times are compared against.
func (s *Store) Now() time.Time { return s.now() }

// timestamp is the clock's time as PostgreSQL keeps it, in UTC to the
// microsecond, so a record returned on creation equals the one read back.
func (s *Store) timestamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// isForeignKeyViolation reports whether err is PostgreSQL refusing a row
// whose reference (here always a project) does not exist.
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// notFound turns "no rows" into store.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}
