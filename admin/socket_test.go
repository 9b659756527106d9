package admin_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// backendOnly hides every method of the bbolt store that is not on
// store.Backend, as a store of another kind lacks them.
type backendOnly struct{ store.Backend }

// TestSocketOnBackendOnly serves the admin socket over nothing but
// store.Backend: projects and keys work through it, while backup and
// doctor, which read the bbolt file, are refused with what to use instead.
func TestSocketOnBackendOnly(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stop, err := admin.Listen(dir, backendOnly{st}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := admin.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}

	p, secret, err := c.CreateProject("through the socket")
	if err != nil {
		t.Fatalf("create project: %v", err)
	}
	if got, _, err := st.Authenticate(secret); err != nil || got.ID != p.ID {
		t.Errorf("the key made through the socket authenticates as %+v (%v), want project %s", got, err, p.ID)
	}
	if keys, err := c.Keys(p.ID); err != nil || len(keys) != 1 {
		t.Errorf("keys through the socket: %d (%v), want 1", len(keys), err)
	}

	if _, err := c.Doctor(); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("doctor through the socket of a store without a bbolt file = %v; want a refusal saying what to use", err)
	}
	if _, err := c.Backup(context.Background(), io.Discard); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("backup through the socket of a store without a bbolt file = %v; want a refusal saying what to use", err)
	}
}

// TestSocketOfAnOlderServer: a server that does not know a call (an older
// docsift, whose mux answers 404 in plain text) is said to be one, not
// reported as an empty error.
func TestSocketOfAnOlderServer(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, admin.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := admin.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Keys("prj_x")
	if err == nil || !strings.Contains(err.Error(), "does not answer GET /keys (HTTP 404): it may be an older docsift") {
		t.Errorf("a call the server does not know: %v", err)
	}
}
