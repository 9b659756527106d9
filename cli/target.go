package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/docsift/docsift/store/postgres"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// adminTarget is where the admin commands (project, key, webhook) act: the
// running server on a data dir, through its socket; else the data dir's
// bbolt file, or a cluster's database when --store names one.
type adminTarget struct {
	data, store string
}

func (a *adminTarget) register(flags *pflag.FlagSet) {
	flags.StringVar(&a.data, "data", defaultDataDir, "data directory")
	flags.StringVar(&a.store, "store", "", "a cluster's postgres:// URL, used when no server runs on the data directory")
}

// open returns the running server's admin socket on the data dir, or the
// store itself when no server runs there. close releases what it opened.
// A data dir without a store is refused (a mistyped --data must not make
// an empty one) unless create is set, for `project create`, which may be
// a new install's first command; made then says a new store was made.
func (a *adminTarget) open(create bool) (st admin.Store, close func(), made bool, err error) {
	if a.store != "" && !isDatabaseURL(a.store) {
		return nil, nil, false, fmt.Errorf("--store must be empty (the data directory's own file) or a postgres:// URL, not %q", redact.URL(a.store))
	}
	if c, err := admin.Dial(a.data); err == nil {
		return c, func() {}, false, nil
	}
	if isDatabaseURL(a.store) {
		pg, err := postgres.Open(a.store)
		if err != nil {
			return nil, nil, false, err
		}
		return pg, func() { pg.Close() }, false, nil
	}
	if isClusterDir(a.data) {
		return nil, nil, false, fmt.Errorf("%s is a cluster node's data directory and its node is not running: pass the cluster's database as --store postgres://… (or DOCSIFT_STORE)", a.data)
	}
	_, err = os.Stat(filepath.Join(a.data, bolt.DBFileName))
	if errors.Is(err, fs.ErrPermission) {
		return nil, nil, false, permissionDenied(a.data)
	}
	made = errors.Is(err, fs.ErrNotExist)
	if made && !create {
		return nil, nil, false, fmt.Errorf("no docsift data in %s: give the --data of a server (or start `docsift serve --data %s` once)", a.data, a.data)
	}
	opener := openAsIs // a command does not upgrade data it did not make
	if made {
		opener = bolt.Open
	}
	bolt, err := opener(a.data)
	if err != nil {
		return nil, nil, false, err
	}
	return bolt, func() { bolt.Close() }, made, nil
}

// notFound says which record an admin command did not find, for an err
// that is store.ErrNotFound (whose own text names the store's call).
func notFound(err error, what, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no %s has the id %q", what, id)
	}
	return err
}

// withAdminOf runs fn with the admin of a (read when the command runs,
// after its flags are parsed).
func withAdminOf(a *adminTarget, fn func(admin.Store, io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		st, done, _, err := a.open(false)
		if err != nil {
			return err
		}
		defer done()
		return fn(st, cmd.OutOrStdout())
	}
}
