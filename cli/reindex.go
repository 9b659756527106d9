package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/progress"
	"github.com/docsift/docsift/llm"
	"github.com/spf13/cobra"
)

func reindexCmd() *cobra.Command {
	var o modelOptions
	var owner, data string
	cmd := &cobra.Command{
		Use:   "reindex",
		Short: "Re-embed owners whose vectors came from another model than the current embedder",
		Long: `Re-embed an owner's chunks (or every owner whose vectors came from another
model) with the current embedder. When a server runs on the data dir, the
server does the work and queries keep being answered from the old vectors
until each owner switches over; otherwise the data dir is opened directly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			progress := func(owner string) func(done, total int) {
				var bar *progress.Bar
				return func(done, total int) {
					if bar == nil {
						bar = progress.New(os.Stderr, owner, total)
					}
					bar.Set(done)
					if done == total {
						bar.Done()
					}
				}
			}
			if c, err := admin.Dial(data); err == nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "a server runs on", data+": it reindexes with its own embedder")
				return c.Reindex(cmd.Context(), owner, cmd.OutOrStdout(), progress)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			st, err := openExisting(data, true)
			if err != nil {
				return err
			}
			defer st.Close()
			if from := st.UpgradedFrom(); from > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "upgraded the data in %s from an older docsift (schema %d): older versions now refuse it\n", data, from)
			}
			em, err := o.chooseEmbedder(cmd.Context(), st, log)
			if err != nil {
				return err
			}
			engine := ingest.New(st, em, filepath.Join(data, "index"), ingest.Config{}, log)
			defer engine.Shutdown(context.Background())
			return admin.RunReindex(cmd.Context(), engine, owner, cmd.OutOrStdout(), progress)
		},
	}
	cmd.Flags().StringVar(&owner, "owner", "", "only this owner (prj_… or cus_…); default: every owner on another model")
	cmd.Flags().StringVar(&data, "data", defaultDataDir, "data directory")
	o.register(cmd.Flags(), false, llm.ModeAuto)
	return cmd
}
