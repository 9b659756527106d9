package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/internal/pgtest"
	"github.com/docsift/docsift/store/storetest"
)

func open(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The PostgreSQL store passes the conformance suite the bbolt store
// passes, each test on a database of its own in one server (a server per
// suite would cost an initdb each).
func TestConformance(t *testing.T) {
	pg := pgtest.Start(t)
	// Finds read a few customers at a time, so that the suite's finds
	// go on across reads.
	open := func(t *testing.T, url string) *Store {
		s := open(t, url)
		s.customersScan = 2
		return s
	}
	t.Run("Projects", func(t *testing.T) {
		storetest.RunProjects(t, func(t *testing.T) storetest.Projects { return open(t, pg.Database(t)) })
	})
	t.Run("Jobs", func(t *testing.T) {
		storetest.RunJobs(t, func(t *testing.T) storetest.Jobs { return open(t, pg.Database(t)) })
	})
	t.Run("Chunks", func(t *testing.T) {
		storetest.RunChunks(t, func(t *testing.T) storetest.Chunks { return open(t, pg.Database(t)) })
	})
	t.Run("Subpages", func(t *testing.T) {
		storetest.RunSubpages(t, func(t *testing.T) storetest.Subpages { return open(t, pg.Database(t)) })
	})
	t.Run("Webhooks", func(t *testing.T) {
		storetest.RunWebhooks(t, func(t *testing.T) storetest.Webhooks { return open(t, pg.Database(t)) })
	})
	t.Run("Quotas", func(t *testing.T) {
		storetest.RunQuotas(t, func(t *testing.T) storetest.Quotas { return open(t, pg.Database(t)) })
	})
}

// Nodes starting together on a new database migrate it once: every Open
// succeeds and each migration is recorded once.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	pg := pgtest.Start(t)
	url := pg.Database(t)
	const nodes = 4
	var wg sync.WaitGroup
	errs := make([]error, nodes)
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(url)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, distinct, newest int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT version), max(version) FROM schema_migrations").
		Scan(&rows, &distinct, &newest); err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) || distinct != len(ms) || newest != ms[len(ms)-1].version {
		t.Fatalf("schema_migrations has %d rows, %d versions, newest %d; want %d once each up to %d",
			rows, distinct, newest, len(ms), ms[len(ms)-1].version)
	}
	// Opening again applies nothing and fails nothing.
	open(t, url)
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&rows); err != nil || rows != len(ms) {
		t.Fatalf("after a second open: %d rows, %v", rows, err)
	}
}

// A database migrated by a newer build is refused, not misread.
func TestNewerSchemaRefused(t *testing.T) {
	pg := pgtest.Start(t)
	url := pg.Database(t)
	open(t, url).Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(url); err == nil {
		s.Close()
		t.Fatal("opened a database with a newer schema")
	}
}
