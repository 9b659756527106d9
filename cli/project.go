package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/store"
	"github.com/spf13/cobra"
)

// openAdmin returns the running server's admin socket on dataDir, or the
// store itself when no server runs there. close releases what it opened.
func openAdmin(dataDir string) (a admin.Store, close func(), err error) {
	if c, err := admin.Dial(dataDir); err == nil {
		return c, func() {}, nil
	}
	st, err := store.Open(dataDir)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

// withAdminOf runs fn with the admin of the data dir *data names (read when
// the command runs, after its flags are parsed).
func withAdminOf(data *string, fn func(admin.Store, io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		a, done, err := openAdmin(*data)
		if err != nil {
			return err
		}
		defer done()
		return fn(a, cmd.OutOrStdout())
	}
}

func projectCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "Manage projects"}
	var name, data string
	var asJSON bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a project and print its id and first API key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(name) == "" {
				return errors.New("--name is required")
			}
			a, done, err := openAdmin(data)
			if err != nil {
				return err
			}
			defer done()
			p, secret, err := a.CreateProject(strings.TrimSpace(name))
			if err != nil {
				return err
			}
			return printKey(cmd.OutOrStdout(), asJSON, admin.CreatedKey{ProjectID: p.ID, APIKey: secret})
		},
	}
	create.Flags().StringVar(&name, "name", "", "project name")
	create.Flags().StringVar(&data, "data", defaultDataDir, "data directory")
	create.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(create)
	return cmd
}

func printKey(w io.Writer, asJSON bool, k admin.CreatedKey) error {
	if asJSON {
		return json.NewEncoder(w).Encode(k)
	}
	fmt.Fprintf(w, "project id: %s\n", k.ProjectID)
	if k.KeyID != "" {
		fmt.Fprintf(w, "key id:     %s\n", k.KeyID)
	}
	fmt.Fprintf(w, "API key:    %s   (shown once)\n", k.APIKey)
	return nil
}
