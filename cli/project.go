package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docsift/docsift/store/pgstore"
	"github.com/spf13/pflag"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/store"
	"github.com/spf13/cobra"
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
func (a *adminTarget) open() (st admin.Store, close func(), err error) {
	if c, err := admin.Dial(a.data); err == nil {
		return c, func() {}, nil
	}
	if isDatabaseURL(a.store) {
		pg, err := pgstore.Open(a.store)
		if err != nil {
			return nil, nil, err
		}
		return pg, func() { pg.Close() }, nil
	}
	if _, err := os.Stat(filepath.Join(a.data, nodeLockFile)); err == nil {
		// A cluster node's dir has no records: do not make an empty
		// bbolt file beside its snapshots.
		return nil, nil, fmt.Errorf("%s is a cluster node's data directory and its node is not running: pass the cluster's database as --store postgres://… (or DOCSIFT_STORE)", a.data)
	}
	bolt, err := store.Open(a.data)
	if err != nil {
		return nil, nil, err
	}
	return bolt, func() { bolt.Close() }, nil
}

// withAdminOf runs fn with the admin of a (read when the command runs,
// after its flags are parsed).
func withAdminOf(a *adminTarget, fn func(admin.Store, io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		st, done, err := a.open()
		if err != nil {
			return err
		}
		defer done()
		return fn(st, cmd.OutOrStdout())
	}
}

func projectCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "Manage projects"}
	var name string
	var target adminTarget
	var asJSON bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a project and print its id and first API key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(name) == "" {
				return errors.New("--name is required")
			}
			a, done, err := target.open()
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
	target.register(create.Flags())
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
