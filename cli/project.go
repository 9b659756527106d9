package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/store"
	"github.com/spf13/cobra"
)

// maxProjectName bounds a project's name as the API bounds a customer's.
const maxProjectName = 200

func projectCmd() *cobra.Command {
	cmd := groupCmd("project", "Manage projects")
	var name string
	var target adminTarget
	var asJSON bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a project and print its id and first API key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch name = strings.TrimSpace(name); {
			case name == "":
				return errors.New("--name is required")
			case utf8.RuneCountInString(name) > maxProjectName:
				return fmt.Errorf("--name is longer than %d characters", maxProjectName)
			case strings.ContainsFunc(name, unicode.IsControl):
				return errors.New("--name must not contain control characters")
			}
			a, done, made, err := target.open(true)
			if err != nil {
				return err
			}
			defer done()
			if made {
				fmt.Fprintf(cmd.ErrOrStderr(), "no docsift data in %s: made a new store there\n", target.data)
			}
			p, secret, err := a.CreateProject(name)
			if err != nil {
				return err
			}
			return printKey(cmd.OutOrStdout(), asJSON, admin.CreatedKey{ProjectID: p.ID, APIKey: secret})
		},
	}
	create.Flags().StringVar(&name, "name", "", "project name")
	target.register(create.Flags())
	create.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the projects, oldest first",
		Args:  cobra.NoArgs,
		RunE: withAdminOf(&target, func(a admin.Store, w io.Writer) error {
			ps, err := a.Projects()
			if err != nil {
				return err
			}
			if asJSON {
				if ps == nil {
					ps = []store.Project{}
				}
				return json.NewEncoder(w).Encode(ps)
			}
			for _, p := range ps {
				fmt.Fprintf(w, "%s  %s  created %s\n", p.ID, p.Name, p.CreatedAt.Format(time.RFC3339))
			}
			return nil
		}),
	}
	target.register(list.Flags())
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(create, list)
	return cmd
}
