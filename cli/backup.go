package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/store/bolt"
	"github.com/spf13/cobra"
)

func backupCmd() *cobra.Command {
	var data, out string
	cmd := &cobra.Command{
		Use:   "backup --out FILE",
		Short: "Write a consistent backup of a data directory, hot if a server runs on it",
		Long: `Write a backup of the data directory to one file: the database as of one
moment, the original uploads and subpage PDFs it refers to, and the index
snapshots, with a manifest of sizes and SHA-256 sums. When a server runs on the data
directory it writes the backup while it keeps serving; otherwise the data
directory is opened directly. Restore it with docsift restore.`,
		Example: `  docsift backup --data /var/lib/docsift --out docsift-$(date +%F).tar`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("--out is required")
			}
			if st, err := os.Stat(out); err == nil && st.IsDir() {
				return fmt.Errorf("--out %s is a directory: name the file to write, like %s", out, filepath.Join(out, "docsift-backup.tar"))
			}
			sweepUnfinished(out, cmd.ErrOrStderr())
			// A stop (Ctrl-C, SIGTERM) ends the backup as a failure, so
			// that its unfinished file is removed.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			start := time.Now()
			m, err := writeFileAtomic(out, func(w io.Writer) (*admin.Manifest, error) {
				w = ctxWriter{ctx, w}
				if c, err := admin.Dial(data); err == nil {
					m, err := c.Backup(ctx, w)
					if err == nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "a server runs on", data+": it wrote the backup while it kept serving")
					}
					return m, err
				}
				st, err := openExisting(data, false)
				if err != nil {
					return nil, err
				}
				defer st.Close()
				return admin.WriteBackup(w, st, data)
			})
			if ctx.Err() != nil && cmd.Context().Err() == nil {
				return errors.New("the backup was stopped: no file was written")
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d files, %s, in %.1f s\n", out, len(m.Files), sizeLabel(m.Bytes()), time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", defaultDataDir, "data directory")
	cmd.Flags().StringVar(&out, "out", "", "file to write")
	return cmd
}

func restoreCmd() *cobra.Command {
	var data string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore FILE --data DIR",
		Short: "Restore a backup into a data directory",
		Long: `Unpack a backup written by docsift backup into the data directory, after
checking every file against the backup's manifest. The directory must be
empty or absent; with --force its contents are moved aside (to
DIR.before-restore-TIME), not deleted. No server may run on it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			start := time.Now()
			m, aside, err := admin.Restore(f, data, force)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "restored %d files (%s) from a backup of %s into %s in %.1f s\n", len(m.Files), sizeLabel(m.Bytes()), m.CreatedAt.Format(time.RFC3339), data, time.Since(start).Seconds())
			if aside != "" {
				fmt.Fprintf(w, "the directory's previous contents are in %s: delete it once the restored server answers as it should\n", aside)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", defaultDataDir, "data directory to restore into")
	cmd.Flags().BoolVar(&force, "force", false, "restore over a non-empty data directory, moving its contents aside")
	return cmd
}

// ctxWriter fails its writes once ctx ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// unfinishedAge is how long the temporary file of a backup must have gone
// unwritten to be taken for one a killed backup left: a running backup
// writes its file continually.
const unfinishedAge = 10 * time.Minute

// sweepUnfinished removes the temporary files that backups to path killed
// before they could (kill -9, a crash) left beside it, and says so.
func sweepUnfinished(path string, w io.Writer) {
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
	for _, f := range left {
		if st, err := os.Stat(f); err == nil && time.Since(st.ModTime()) > unfinishedAge && os.Remove(f) == nil {
			fmt.Fprintf(w, "removed %s (%s), left by a backup that was killed\n", f, sizeLabel(st.Size()))
		}
	}
}

// writeFileAtomic writes path through write: to a temporary file beside it,
// synced and renamed into place once write succeeded, so a failed or cut
// backup never leaves a file that looks whole.
func writeFileAtomic[T any](path string, write func(io.Writer) (T, error)) (T, error) {
	var zero T
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return zero, err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	v, err := write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return zero, err
	}
	return v, os.Rename(tmp.Name(), path)
}

func sizeLabel(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
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
