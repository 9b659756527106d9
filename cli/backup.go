package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/docsift/docsift/admin"
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
			for _, f := range admin.SweepUnfinished(out) {
				fmt.Fprintf(cmd.ErrOrStderr(), "removed %s (%s), left by a backup that was killed\n", f.Path, sizeLabel(f.Size))
			}
			// A stop (Ctrl-C, SIGTERM) ends the backup as a failure, so
			// that its unfinished file is removed.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			start := time.Now()
			m, err := admin.WriteBackupFile(ctx, out, func(w io.Writer) (*admin.Manifest, error) {
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
