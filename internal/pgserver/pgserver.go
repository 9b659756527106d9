// Package pgserver starts a throwaway PostgreSQL server: a fresh cluster
// made by initdb in a temporary directory, listening on a free port of
// 127.0.0.1 with its unix socket in that directory, its data never
// flushed to disk, stopped and deleted at Close. It never touches a
// system PostgreSQL service. `docsift bench cluster` runs on one, and
// internal/pgtest gives one to a test.
//
// The server binaries come from PATH or from Debian's
// /usr/lib/postgresql/*/bin; without them Launch's error wraps
// ErrNotInstalled.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running throwaway PostgreSQL.
type Server struct {
	bin  string // directory of initdb, pg_ctl and postgres
	dir  string // the temporary directory: data/, the socket and the log
	port int
	cred *syscall.Credential // the postgres user's, when this process runs as root
	dbs  atomic.Int64        // names databases made by NewDatabase
}

// ErrNotInstalled is the cause of Launch's error when this machine lacks
// what a server needs: the binaries, or as root the postgres user.
var ErrNotInstalled = errors.New("PostgreSQL is not installed")

// Launch starts a server in a new temporary directory; Close stops it and
// removes the directory.
func Launch() (*Server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, fmt.Errorf("pgserver: %w: %w", ErrNotInstalled, err)
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		// initdb refuses to run as root, so the server runs as the system
		// user Debian's package creates for it.
		if s.cred, err = postgresUser(); err != nil {
			return nil, fmt.Errorf("pgserver: %w: %w", ErrNotInstalled, err)
		}
	}
	// Not a test's TempDir: its parents are private to root, and the
	// postgres user must reach this directory.
	if s.dir, err = os.MkdirTemp("", "docsift-pg-"); err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	if err := s.launch(); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	return s, nil
}

// launch makes the cluster in s.dir and starts the server.
func (s *Server) launch() error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("give %s to the postgres user: %w", s.dir, err)
		}
	}
	if out, err := s.command("initdb", "-D", s.dataDir(), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// A port is free when picked but may be taken before postgres binds it:
	// try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.port = port
		if err := s.configure(); err != nil {
			return err
		}
		err = s.Resume()
		if err == nil {
			return nil
		}
		if attempt == 2 {
			return err
		}
	}
}

// Close stops the server at once and removes its directory.
func (s *Server) Close() error {
	err := s.Stop(true)
	if rmErr := os.RemoveAll(s.dir); err == nil && rmErr != nil {
		err = fmt.Errorf("pgserver: %w", rmErr)
	}
	return err
}

// URL is the connection URL of the server's postgres database.
func (s *Server) URL() string { return s.url("postgres") }

func (s *Server) url(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Dir is the temporary directory holding the server's data, its unix
// socket and its log (postgres.log).
func (s *Server) Dir() string { return s.dir }

// Port is the TCP port the server listens on, the same across restarts.
func (s *Server) Port() int { return s.port }

// NewDatabase creates an empty database on the server and returns its
// URL, so that users of one server do not see each other's tables.
func (s *Server) NewDatabase() (string, error) {
	name := fmt.Sprintf("test_%d", s.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return "", fmt.Errorf("pgserver: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgserver: create database %s: %w", name, err)
	}
	return s.url(name), nil
}

// Stop stops the server. A fast stop disconnects clients and shuts down
// cleanly at once; otherwise it is a smart stop, which waits for every
// client to disconnect first. Stopping a stopped server does nothing.
func (s *Server) Stop(fast bool) error {
	if _, err := os.Stat(filepath.Join(s.dataDir(), "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	mode := "smart"
	if fast {
		mode = "fast"
	}
	if out, err := s.command("pg_ctl", "stop", "-D", s.dataDir(), "-m", mode, "-w").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w\n%s", mode, err, out)
	}
	return nil
}

// Resume starts a stopped server again on the same port and data, and
// returns once it accepts connections.
func (s *Server) Resume() error {
	out, err := s.command("pg_ctl", "start", "-D", s.dataDir(),
		"-l", filepath.Join(s.dir, "postgres.log"), "-w", "-t", "60").CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	return nil
}

// Restart stops the server (fast or smart, see Stop) and starts it again.
// Clients see their connections end and must reconnect.
func (s *Server) Restart(fast bool) error {
	if err := s.Stop(fast); err != nil {
		return err
	}
	return s.Resume()
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// configure writes the listening address and the settings of a server
// whose data is thrown away: nothing is flushed to disk.
func (s *Server) configure() error {
	conf := fmt.Sprintf(`
# pgserver
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 100
`, s.port, s.dir)
	path := filepath.Join(s.dataDir(), "postgresql.auto.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

// command runs one of the server's programs, as the postgres user when
// this process runs as root.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir // postgres complains about a working directory it cannot read
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
		cmd.Env = append(os.Environ(), "HOME="+s.dir)
	}
	return cmd
}

// findBinaries returns the directory holding initdb, pg_ctl and postgres:
// PATH first, then the newest of Debian's versioned directories.
func findBinaries() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(debian, func(i, j int) bool { return version(debian[i]) > version(debian[j]) })
	dirs = append(dirs, debian...)
	for _, dir := range dirs {
		if hasAll(dir, "initdb", "pg_ctl", "postgres") {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in PATH or /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func hasAll(dir string, names ...string) bool {
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb refuses root: need the postgres system user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user's uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user's gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
