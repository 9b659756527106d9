// Package pgtest gives a test a throwaway PostgreSQL server (see
// internal/pgserver), stopped and deleted when the test ends.
//
// Without the server binaries a test skips, saying how to install them,
// unless DOCSIFT_REQUIRE_POSTGRES=1 (CI sets it), when it fails instead.
package pgtest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/pgserver"
)

// RequireEnv names the variable that turns a missing PostgreSQL into a
// test failure rather than a skip.
const RequireEnv = "DOCSIFT_REQUIRE_POSTGRES"

// Server is a running throwaway PostgreSQL, with what tests ask of it.
type Server struct{ *pgserver.Server }

// Start starts a server for t, stopped and removed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := pgserver.Launch()
	if errors.Is(err, pgserver.ErrNotInstalled) {
		Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return &Server{s}
}

// Database creates an empty database on the server and returns its URL,
// so that tests sharing one server do not see each other's tables.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	u, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Unavailable skips t, or fails it when PostgreSQL is required, for err
// saying that this machine cannot run a server (pgserver.ErrNotInstalled).
func Unavailable(t testing.TB, err error) {
	t.Helper()
	msg := fmt.Sprintf("%v; install them with `apt-get install postgresql` (Debian)", err)
	if strings.TrimSpace(os.Getenv(RequireEnv)) == "1" {
		t.Fatal(msg + " (" + RequireEnv + "=1)")
	}
	t.Skip(msg)
}
