package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/store"
	"github.com/spf13/cobra"
)

func keyCmd() *cobra.Command {
	cmd := groupCmd("key", "Manage a project's API keys")
	var projectID string
	var target adminTarget
	var asJSON bool
	target.register(cmd.PersistentFlags())
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	withAdmin := func(fn func(admin.Store, io.Writer) error) func(*cobra.Command, []string) error {
		return withAdminOf(&target, fn)
	}
	create := &cobra.Command{
		Use: "create", Short: "Create an API key for a project", Args: cobra.NoArgs,
		RunE: withAdmin(func(a admin.Store, w io.Writer) error {
			secret, k, err := a.CreateKey(projectID)
			if err != nil {
				return notFound(err, "project", projectID)
			}
			return printKey(w, asJSON, admin.CreatedKey{ProjectID: k.ProjectID, KeyID: k.ID, APIKey: secret})
		}),
	}
	list := &cobra.Command{
		Use: "list", Short: "List a project's API keys (never their secrets)", Args: cobra.NoArgs,
		RunE: withAdmin(func(a admin.Store, w io.Writer) error {
			keys, err := a.Keys(projectID)
			if err != nil {
				return notFound(err, "project", projectID)
			}
			if asJSON {
				if keys == nil {
					keys = []store.APIKey{}
				}
				return json.NewEncoder(w).Encode(keys)
			}
			for _, k := range keys {
				state := "active"
				if k.RevokedAt != nil {
					state = "revoked " + k.RevokedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s  %s…  created %s  %s\n", k.ID, k.Hint, k.CreatedAt.Format(time.RFC3339), state)
			}
			return nil
		}),
	}
	for _, c := range []*cobra.Command{create, list} {
		c.Flags().StringVar(&projectID, "project", "", "project id (prj_…)")
		c.MarkFlagRequired("project")
	}
	var keyID string
	revoke := &cobra.Command{
		Use: "revoke KEY_ID", Short: "Revoke an API key by its id (key_…)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keyID = args[0]
			return withAdmin(func(a admin.Store, w io.Writer) error {
				start := time.Now()
				k, err := a.RevokeKey(keyID)
				if err != nil {
					return notFound(err, "API key", keyID)
				}
				if asJSON {
					return json.NewEncoder(w).Encode(k)
				}
				// A key revoked before keeps its first revocation's time.
				if k.RevokedAt != nil && k.RevokedAt.Before(start) {
					fmt.Fprintf(w, "%s was already revoked (%s)\n", k.ID, k.RevokedAt.Format(time.RFC3339))
					return nil
				}
				fmt.Fprintf(w, "revoked %s\n", k.ID)
				return nil
			})(cmd, nil)
		},
	}
	cmd.AddCommand(create, list, revoke)
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
