// Command docsift is a self-hosted document indexing and semantic search
// service. This file holds the command line: flags, environment, wiring.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const (
	defaultAddr    = "127.0.0.1:8080"
	defaultDataDir = "./data"
	// shutdownGrace is how long requests and jobs get to finish on SIGTERM
	// before jobs are cancelled and requeued.
	shutdownGrace = 20 * time.Second
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "docsift:", err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:               "docsift",
		Short:             "Self-hosted document indexing and semantic search",
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           version,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return flagsFromEnv(cmd.Flags())
		},
	}
	root.AddCommand(serveCmd(), projectCmd(), keyCmd(), evalCmd(), benchCmd(), reindexCmd(), modelsCmd())
	return root
}

// flagsFromEnv gives every flag not set on the command line the value of
// DOCSIFT_<FLAG> (upper case, dashes as underscores) when that is set.
func flagsFromEnv(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		name := "DOCSIFT_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && !f.Changed && err == nil {
			if e := flags.Set(f.Name, v); e != nil {
				err = fmt.Errorf("environment %s=%q: %w", name, v, e)
			}
		}
	})
	return err
}

type serveOptions struct {
	addr, data, baseURL string
	workers             int
	maxFile, maxText    int64
	sessionTTL          time.Duration
	subpageTTL          time.Duration
	logFormat           string
	models              modelOptions
	maxAttempts         int
	retryMax            time.Duration
	extractTimeout      time.Duration
	rateLimit           float64
	sessionRateLimit    float64
	searxngURL          string
}

func serveCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API and the indexing workers",
		Long: `Run the HTTP API and the indexing workers.

Every flag can also be set as DOCSIFT_<FLAG> in the environment, e.g.
DOCSIFT_ADDR=0.0.0.0:8080. On first start with an empty data directory a
project named "default" is created and its API key printed once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), o, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", defaultAddr, "address to listen on")
	f.StringVar(&o.data, "data", defaultDataDir, "data directory")
	f.StringVar(&o.baseURL, "base-url", "", "URL clients reach the server at, for session and subpage URLs (default http://ADDR)")
	f.IntVar(&o.workers, "workers", 0, "indexing workers (default: number of CPUs)")
	f.Int64Var(&o.maxFile, "max-file-size", server.DefaultMaxFileBytes, "largest file upload, in bytes")
	f.Int64Var(&o.maxText, "max-text-size", server.DefaultMaxTextBytes, "largest text upload, in bytes")
	f.DurationVar(&o.sessionTTL, "session-ttl", server.DefaultSessionTTL, "how long an upload session URL stays valid")
	f.DurationVar(&o.subpageTTL, "subpage-ttl", server.DefaultSubpageTTL, "how long a subpage URL stays valid")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.IntVar(&o.maxAttempts, "max-attempts", ingest.DefaultMaxAttempts, "runs of an indexing job that fails for a passing reason (Ollama down) before it is FAILED")
	f.DurationVar(&o.retryMax, "retry-max-delay", ingest.DefaultRetryMax, "longest wait between those runs (the wait doubles from 2s)")
	f.DurationVar(&o.extractTimeout, "extract-timeout", ingest.DefaultExtractTimeout, "longest text extraction of one document before its job fails")
	f.Float64Var(&o.rateLimit, "rate-limit", server.DefaultRateLimit, "API requests per second per project (0: unlimited); over it: 429 with Retry-After")
	f.Float64Var(&o.sessionRateLimit, "session-rate-limit", server.DefaultSessionRateLimit, "requests per second per upload session URL (0: unlimited)")
	f.StringVar(&o.searxngURL, "searxng-url", "", "SearxNG-compatible search endpoint for POST /search/internet (unset: internet search is off)")
	o.models.register(f, true, llm.ModeAuto)
	return cmd
}

func newLogger(format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, nil)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

func serve(ctx context.Context, o serveOptions, out io.Writer) error {
	log, err := newLogger(o.logFormat)
	if err != nil {
		return err
	}
	if o.baseURL == "" {
		o.baseURL = defaultBaseURL(o.addr)
	}
	st, err := store.Open(o.data)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := firstStart(st, o.baseURL, out); err != nil {
		return err
	}

	embedder, err := o.models.chooseEmbedder(ctx, st, log)
	if err != nil {
		return err
	}
	answerer, err := o.models.chooseAnswerer(ctx, log)
	if err != nil {
		return err
	}
	cfg := ingest.Config{Workers: o.workers, MaxAttempts: o.maxAttempts, RetryMax: o.retryMax, ExtractTimeout: o.extractTimeout}
	if _, isOllama := embedder.(*llm.OllamaEmbedder); !isOllama && o.models.embedder != llm.ModeBuiltin {
		// Ollama was not usable at start: owners whose vectors came from
		// it keep it, and their jobs wait for it to come back.
		if oe, err := llm.NewOllamaEmbedder(o.models.ollama); err == nil {
			cfg.Embedders = append(cfg.Embedders, oe)
		}
	}
	engine := ingest.New(st, embedder, filepath.Join(o.data, "index"), cfg, log)
	if err := engine.Start(); err != nil {
		return err
	}
	scfg := server.Config{
		BaseURL: o.baseURL, MaxFileBytes: o.maxFile, MaxTextBytes: o.maxText,
		SessionTTL: o.sessionTTL, SubpageTTL: o.subpageTTL, Version: version,
		RateLimit: o.rateLimit, SessionRateLimit: o.sessionRateLimit,
	}
	if o.searxngURL != "" {
		web, err := llm.NewSearx(o.searxngURL, nil)
		if err != nil {
			return err
		}
		scfg.Web = web
	}
	api := server.New(scfg, st, engine, answerer, log)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	closeAdmin, err := server.ListenAdmin(o.data, st, engine)
	if err != nil {
		return err
	}
	defer closeAdmin()

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	log.Info("docsift listening", "addr", ln.Addr().String(), "base_url", o.baseURL, "data", o.data, "version", version)
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		engine.Shutdown(context.Background())
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests and jobs", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("requests still open at the deadline were cut", "err", err)
	}
	if err := engine.Shutdown(sctx); err != nil {
		log.Error("index snapshot at shutdown failed; the next start rebuilds from the store", "err", err)
	}
	log.Info("stopped")
	return nil
}

func defaultBaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// firstStart creates the "default" project on an empty data dir and prints
// its key once, with a command that works as printed.
func firstStart(st *store.Store, baseURL string, w io.Writer) error {
	ps, err := st.Projects()
	if err != nil || len(ps) > 0 {
		return err
	}
	p, secret, err := st.CreateProject("default")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `
docsift: created project "default"
  project id: %s
  API key:    %s   (shown once: keep it somewhere safe)

Try it:
  curl -s %s/upload/text -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
    -d '{"owner_id": "%s", "text": "docsift indexes documents for semantic search."}'
  curl -s %s/query/project -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
    -d '{"project_id": "%s", "query": "what does docsift do?"}'

`, p.ID, secret, baseURL, secret, p.ID, baseURL, secret, p.ID)
	return nil
}

// openAdmin returns the running server's admin socket on dataDir, or the
// store itself when no server runs there. close releases what it opened.
func openAdmin(dataDir string) (admin server.Admin, close func(), err error) {
	if c, err := server.DialAdmin(dataDir); err == nil {
		return c, func() {}, nil
	}
	st, err := store.Open(dataDir)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
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
			admin, done, err := openAdmin(data)
			if err != nil {
				return err
			}
			defer done()
			p, secret, err := admin.CreateProject(strings.TrimSpace(name))
			if err != nil {
				return err
			}
			return printKey(cmd.OutOrStdout(), asJSON, server.CreatedKey{ProjectID: p.ID, APIKey: secret})
		},
	}
	create.Flags().StringVar(&name, "name", "", "project name")
	create.Flags().StringVar(&data, "data", defaultDataDir, "data directory")
	create.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(create)
	return cmd
}

func printKey(w io.Writer, asJSON bool, k server.CreatedKey) error {
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

func keyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "Manage a project's API keys"}
	var data, projectID string
	var asJSON bool
	cmd.PersistentFlags().StringVar(&data, "data", defaultDataDir, "data directory")
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	withAdmin := func(fn func(server.Admin, io.Writer) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			admin, done, err := openAdmin(data)
			if err != nil {
				return err
			}
			defer done()
			return fn(admin, cmd.OutOrStdout())
		}
	}
	create := &cobra.Command{
		Use: "create", Short: "Create an API key for a project", Args: cobra.NoArgs,
		RunE: withAdmin(func(a server.Admin, w io.Writer) error {
			secret, k, err := a.CreateKey(projectID)
			if err != nil {
				return err
			}
			return printKey(w, asJSON, server.CreatedKey{ProjectID: k.ProjectID, KeyID: k.ID, APIKey: secret})
		}),
	}
	list := &cobra.Command{
		Use: "list", Short: "List a project's API keys (never their secrets)", Args: cobra.NoArgs,
		RunE: withAdmin(func(a server.Admin, w io.Writer) error {
			keys, err := a.Keys(projectID)
			if err != nil {
				return err
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
			return withAdmin(func(a server.Admin, w io.Writer) error {
				k, err := a.RevokeKey(keyID)
				if err != nil {
					return err
				}
				if asJSON {
					return json.NewEncoder(w).Encode(k)
				}
				fmt.Fprintf(w, "revoked %s\n", k.ID)
				return nil
			})(cmd, nil)
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
