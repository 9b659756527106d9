package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/docsift/docsift/admin"
	"github.com/spf13/cobra"
)

func doctorCmd() *cobra.Command {
	var data string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a data directory and say what to do about what is wrong",
		Long: `Check a data directory: the store's schema and records, the original files
against the documents that refer to them, every owner's index snapshot
against the store, leftovers of interrupted writes, the kernel's limit on
memory maps against the owners (one each once loaded), and free disk space.
Each finding is ok, warn or fail, with what to do; the exit status is 1
when any fails. With a server running on the directory, the server does the
checking.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var findings []admin.Finding
			if c, err := admin.Dial(data); err == nil {
				if findings, err = c.Doctor(); err != nil {
					return err
				}
			} else {
				st, err := openExisting(data, false)
				if err != nil {
					return err
				}
				findings = admin.Doctor(st, data, false)
				st.Close()
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := json.NewEncoder(w).Encode(findings); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				for _, f := range findings {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Status, f.Check, f.Detail)
					if f.Fix != "" && f.Status != admin.StatusOK {
						fmt.Fprintf(tw, "\t\t→ %s\n", f.Fix)
					}
				}
				tw.Flush()
			}
			for _, f := range findings {
				if f.Status == admin.StatusFail {
					return errors.New("some checks failed")
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", defaultDataDir, "data directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
