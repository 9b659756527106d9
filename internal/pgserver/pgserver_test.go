package pgserver_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/pgserver"
	"github.com/docsift/docsift/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// The server answers queries, keeps its data and port across a fast
// restart (the connection open before it breaks), and gives each
// Database call its own empty database.
func TestStartQueryRestart(t *testing.T) {
	s := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}

	if err := s.Restart(true); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("a connection from before the restart still works: the server did not restart")
	}
	again, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatalf("connect after restart: %v", err)
	}
	defer again.Close(ctx)
	var v int
	if err := again.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v = %d, err = %v; want 42", v, err)
	}

	other, err := pgx.Connect(ctx, s.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var n int
	if err := other.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a new database sees %d tables named kept (err %v); want 0", n, err)
	}
}

// Stopped, the server refuses connections; resumed, it answers again.
func TestStopAndResume(t *testing.T) {
	s := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(true); err != nil {
		t.Fatal(err)
	}
	if conn, err := pgx.Connect(ctx, s.URL()); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatalf("connect after resume: %v", err)
	}
	conn.Close(ctx)
}

// Launched outside a test, the server answers in a database of its own,
// and Close stops it and leaves nothing behind.
func TestLaunchClose(t *testing.T) {
	s, err := pgserver.Launch()
	if errors.Is(err, pgserver.ErrNotInstalled) {
		pgtest.Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil || name == "postgres" {
		t.Fatalf("NewDatabase's URL reaches database %q (err %v); want a new one", name, err)
	}
	conn.Close(ctx)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there after Close: %v", s.Dir(), err)
	}
	if conn, err := pgx.Connect(ctx, s.URL()); err == nil {
		conn.Close(ctx)
		t.Fatal("connected after Close")
	}
}
