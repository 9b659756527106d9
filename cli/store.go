package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

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

// openExisting opens the store of a data dir that has one. bolt.Open
// would create an empty one: a mistyped --data must not make a backup or a
// health report of nothing. Data of an older docsift is upgraded only when
// upgrade is set (see openAsIs).
func openExisting(data string, upgrade bool) (*bolt.Store, error) {
	if isClusterDir(data) {
		return nil, fmt.Errorf("%s is a cluster node's data directory: its records are in PostgreSQL; back them up and check them with PostgreSQL's own tools (pg_dump, a streaming replica), see docs/cluster.md", data)
	}
	if _, err := os.Stat(filepath.Join(data, bolt.DBFileName)); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, permissionDenied(data)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no docsift data in %s: give the --data of a server", data)
		}
		return nil, fmt.Errorf("no docsift data in %s (%v)", data, err)
	}
	if upgrade {
		return bolt.Open(data)
	}
	return openAsIs(data)
}

// openAsIs opens a data dir's store without upgrading data of an older
// docsift, which older versions would then refuse: a backup taken to go
// back to the older version with, or a look at its health, must leave it
// as it is.
func openAsIs(data string) (*bolt.Store, error) {
	st, err := bolt.OpenAsIs(data)
	if errors.Is(err, bolt.ErrOlderData) {
		return nil, fmt.Errorf("%s holds data of an older docsift (%v): use that version for this, or start `docsift serve --data %s` once to upgrade the data (older versions then refuse it)", data, err, data)
	}
	return st, err
}

// permissionDenied says that this user may not read a data dir, which
// is there: an admin command run as another user than the server's.
func permissionDenied(data string) error {
	return fmt.Errorf("this user may not read the data directory %s (permission denied): run the command as the user docsift serves as, e.g. sudo -u docsift docsift …", data)
}
