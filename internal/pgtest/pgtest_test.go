package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The server answers queries, keeps its data and port across a fast
// restart (the connection open before it breaks), and gives each
// Database call its own empty database.
func TestStartQueryRestart(t *testing.T) {
	s := Start(t)
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
	s := Start(t)
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
