// Package cli is docsift's command line: one file per command, named after
// it, holding its flags (each also read from DOCSIFT_<FLAG>) and the wiring
// of the packages it runs (serve's flags, the most, in serve_flags.go).
// What several commands share has a file of its own: the store a data dir
// or --store names (store.go), where the admin commands act (target.go),
// the model flags and choice (modelchoice.go), sizes (bytesize.go).
package cli

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultDataDir is where every command finds the data unless --data says.
const defaultDataDir = "./data"

// Execute runs the command line with os.Args and returns the process's exit
// status. version is the build's, shown by --version and /healthz.
func Execute(version string) int {
	if err := rootCmd(version).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "docsift:", err)
		return 1
	}
	return 0
}

func rootCmd(version string) *cobra.Command {
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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return plainFlagError(err) })
	root.AddCommand(serveCmd(version), projectCmd(), keyCmd(), evalCmd(), benchCmd(), reindexCmd(), modelsCmd(), backupCmd(), restoreCmd(), doctorCmd(), webhookCmd())
	root.SetHelpCommand(helpCmd())
	return root
}

// helpCmd is `docsift help [command]`. cobra's own prints "Unknown help
// topic" for a command that does not exist and exits 0, which a script
// takes for success.
func helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 || (len(args) > 0 && target == cmd.Root()) {
				return fmt.Errorf("no command %q: see docsift --help for the commands", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

// groupCmd is a command that only holds subcommands. Run with anything
// else (a misspelt subcommand, or none) it fails, where cobra would print
// its help and exit 0, which a script would take for success; flags are
// not checked first, so that the error names the subcommand.
func groupCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short,
		Args:               cobra.NoArgs, // `unknown command "delete" for "docsift key"`
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
		RunE: func(cmd *cobra.Command, _ []string) error {
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return fmt.Errorf("%s needs a subcommand: %s (see %s --help)", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
		},
	}
}

// flagsFromEnv gives every flag not set on the command line the value of
// DOCSIFT_<FLAG> (upper case, dashes as underscores) when that is set.
func flagsFromEnv(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		name := "DOCSIFT_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && !f.Changed && err == nil {
			if e := flags.Set(f.Name, v); e != nil {
				err = fmt.Errorf("environment %s=%q: %w", name, v, plainFlagError(e))
			}
		}
	})
	return err
}

// flagParseError matches what strconv and time say of a value they cannot
// read, which pflag passes on as it is.
var flagParseError = regexp.MustCompile(`(strconv\.Parse(Bool|Int|Uint|Float): parsing "[^"]*": (invalid syntax|value out of range))|(time: (invalid|missing unit in) duration "[^"]*")`)

// plainFlagError says what a flag's value should be in place of Go's
// parse errors ("strconv.ParseBool: parsing "yes": invalid syntax").
func plainFlagError(err error) error {
	msg := flagParseError.ReplaceAllStringFunc(err.Error(), func(m string) string {
		switch {
		case strings.Contains(m, "value out of range"):
			return "out of range"
		case strings.HasPrefix(m, "strconv.ParseBool"):
			return "not true or false"
		case strings.HasPrefix(m, "strconv.ParseFloat"):
			return "not a number"
		case strings.HasPrefix(m, "strconv."):
			return "not a whole number"
		}
		return "not a duration such as 30s, 5m or 1h"
	})
	return errors.New(msg)
}
