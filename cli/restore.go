package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/docsift/docsift/admin"
	"github.com/spf13/cobra"
)

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
