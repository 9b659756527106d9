package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/outbound"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/webhook"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func webhookCmd() *cobra.Command {
	cmd := groupCmd("webhook", "Manage a project's webhooks (also: POST/GET/DELETE /webhooks)")
	var projectID, url string
	var target adminTarget
	var events []string
	var asJSON bool
	target.register(cmd.PersistentFlags())
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	var addresses webhookAddresses
	create := &cobra.Command{
		Use: "create", Short: "Register an endpoint for job events; prints its signing secret once", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdminOf(&target, func(a admin.Store, w io.Writer) error {
				var evs []string
				if len(events) > 0 {
					evs = events
				}
				if err := webhook.CheckEndpoint(url, evs); err != nil {
					return err
				}
				evs = webhook.EventSet(evs)
				have, err := a.Webhooks(projectID)
				if err != nil {
					return notFound(err, "project", projectID)
				}
				if err := webhook.CheckRoom(len(have)); err != nil {
					return err
				}
				// A running server checks the address with its own
				// flags, as it delivers; with none running, these
				// flags stand for those the server will start with.
				if _, running := a.(*admin.Client); running {
					if cmd.Flags().Changed("allow-private-webhooks") || cmd.Flags().Changed("webhook-allow-cidr") {
						fmt.Fprintf(cmd.ErrOrStderr(), "note: the server running on %s checks the address with its own --allow-private-webhooks and --webhook-allow-cidr, not these\n", target.data)
					}
				} else {
					guard, err := addresses.guard()
					if err != nil {
						return err
					}
					if err := webhook.CheckAddress(cmd.Context(), guard, url); err != nil {
						return err
					}
				}
				wh, err := a.CreateWebhook(projectID, url, evs)
				if err != nil {
					return notFound(err, "project", projectID)
				}
				if asJSON {
					return json.NewEncoder(w).Encode(wh)
				}
				fmt.Fprintf(w, "webhook id: %s\nevents:     %s\nsecret:     %s   (shown once: the receiver checks signatures with it)\n", wh.ID, strings.Join(wh.Events, ", "), wh.Secret)
				return nil
			})(cmd, nil)
		},
	}
	addresses.register(create.Flags())
	create.Flags().StringVar(&url, "url", "", "http(s) URL the deliveries are POSTed to")
	create.Flags().StringSliceVar(&events, "event", nil, "event to deliver (repeat for more): "+strings.Join(webhook.Events, ", ")+"; default all")
	list := &cobra.Command{
		Use: "list", Short: "List a project's webhooks (never their secrets)", Args: cobra.NoArgs,
		RunE: withAdminOf(&target, func(a admin.Store, w io.Writer) error {
			ws, err := a.Webhooks(projectID)
			if err != nil {
				return notFound(err, "project", projectID)
			}
			for i := range ws {
				ws[i].Secret = ""
			}
			if asJSON {
				if ws == nil {
					ws = []store.Webhook{}
				}
				return json.NewEncoder(w).Encode(ws)
			}
			for _, wh := range ws {
				fmt.Fprintf(w, "%s  %s  %s  created %s\n", wh.ID, wh.URL, strings.Join(wh.Events, ","), wh.CreatedAt.Format(time.RFC3339))
			}
			return nil
		}),
	}
	for _, c := range []*cobra.Command{create, list} {
		c.Flags().StringVar(&projectID, "project", "", "project id (prj_…)")
		c.MarkFlagRequired("project")
	}
	var id string
	del := &cobra.Command{
		Use: "delete WEBHOOK_ID", Short: "Delete a webhook and its deliveries", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id = args[0]
			return withAdminOf(&target, func(a admin.Store, w io.Writer) error {
				if err := a.DeleteWebhook(id); err != nil {
					return notFound(err, "webhook", id)
				}
				fmt.Fprintf(w, "deleted %s\n", id)
				return nil
			})(cmd, nil)
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}

// webhookAddresses are the flags that let webhooks go inside the
// operator's network, read by serve, and by webhook create when no server
// runs on the data directory.
type webhookAddresses struct {
	allowPrivate bool
	cidrs        []string
}

func (w *webhookAddresses) register(f *pflag.FlagSet) {
	f.BoolVar(&w.allowPrivate, "allow-private-webhooks", false, "let projects' webhooks go to this server's own networks: loopback, private (10/8, 172.16/12, 192.168/16), shared (100.64/10) and unique-local (fc00::/7) addresses. Off, they may go only to the internet; link-local and cloud metadata addresses stay refused either way")
	f.StringSliceVar(&w.cidrs, "webhook-allow-cidr", nil, "a network projects' webhooks may go to whatever it is, such as 10.1.2.0/24, fd12:3456::/48 or one address (repeat the flag or separate with commas): narrower than --allow-private-webhooks, for a few internal receivers")
}

// guard is the outbound guard the flags describe.
func (w *webhookAddresses) guard() (*outbound.Guard, error) {
	allow, err := outbound.ParsePrefixes(w.cidrs)
	if err != nil {
		return nil, fmt.Errorf("--webhook-allow-cidr: %w", err)
	}
	return &outbound.Guard{AllowPrivate: w.allowPrivate, Allow: allow}, nil
}
