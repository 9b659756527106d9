package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/docsift/docsift/internal/progress"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/spf13/cobra"
)

func modelsCmd() *cobra.Command {
	cmd := groupCmd("models", "Manage the Ollama models docsift uses")
	var o modelOptions
	var update bool
	pull := &cobra.Command{
		Use:   "pull",
		Short: "Pull the configured embedding and chat models into Ollama",
		Long: `Pull the configured embedding and chat models into Ollama, skipping those
it already has (--update pulls them anyway, for a newer version).

Ollama downloads from its registry (registry.ollama.ai). Where the
server cannot reach it, copy the models from a machine that can, or build
them with ` + "`ollama create`" + `; the error says how.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			clients, err := ollama.NewClients(o.ollama)
			if err != nil {
				return err
			}
			// Only the models the flags would have the server use.
			cfg := o.ollama.WithDefaults()
			var models []string
			if o.embedder != llm.ModeBuiltin {
				models = append(models, cfg.EmbedModel)
			}
			if o.answerer != llm.ModeExtractive {
				models = append(models, cfg.ChatModel)
			}
			if len(models) == 0 {
				return errors.New("--embedder builtin and --answerer extractive use no Ollama model: nothing to pull")
			}
			for _, c := range clients {
				if err := pullModels(cmd, c, models, update); err != nil {
					return err
				}
			}
			return nil
		},
	}
	o.register(pull.Flags(), true, llm.ModeAuto)
	pull.Flags().BoolVar(&update, "update", false, "pull models Ollama already has too (asks the registry for a newer version)")
	cmd.AddCommand(pull)
	return cmd
}

// pullModels pulls models into one server, skipping those it has unless
// update.
func pullModels(cmd *cobra.Command, c *ollama.Client, models []string, update bool) error {
	for _, m := range models {
		err := c.HasModel(cmd.Context(), m)
		var missing *llm.ModelNotFoundError
		if err != nil && !errors.As(err, &missing) {
			return errors.New(llm.DescribeAt(err))
		}
		have := err == nil
		if have && !update {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: already in Ollama at %s (--update pulls it again)\n", m, c)
			continue
		}
		if err := pullModel(cmd, c, m); err != nil {
			if have && errors.Is(err, ollama.ErrRegistryUnreachable) {
				return fmt.Errorf("%s: not updated, and the copy Ollama at %s has stays in use: %w", m, c, ollama.ErrRegistryUnreachable)
			}
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: ready\n", m)
	}
	return nil
}

// pullModel pulls m with a progress bar. When Ollama cannot reach its
// registry the error says how to install the model without it: a pull asks
// the registry even for a model that is present, so an air-gapped server
// gets its models by copying or building them.
func pullModel(cmd *cobra.Command, c *ollama.Client, m string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "pulling %s from Ollama at %s\n", m, c)
	var bar *progress.Bar
	var total int64
	err := c.Pull(cmd.Context(), m, func(done, all int64, status string) {
		if all > 0 && all != total {
			bar.Done()
			total = all
			bar = progress.New(os.Stderr, fmt.Sprintf("%-12.12s MiB", status), int(all>>20))
		}
		bar.Set(int(done >> 20))
	})
	bar.Done()
	if errors.Is(err, ollama.ErrRegistryUnreachable) {
		//nolint:staticcheck // a message of several lines for the terminal, its last a sentence
		return fmt.Errorf(`%w

%s is not in Ollama at %s and Ollama cannot download it: its registry is out of reach
(no internet access, a firewall, or a proxy it cannot use). To install it without the registry:
  - on a machine with internet access, run `+"`ollama pull %s`"+`, then copy that
    machine's models directory (~/.ollama/models, or $OLLAMA_MODELS; for the Linux service
    /usr/share/ollama/.ollama/models) to this server's: all of it, or only the model's
    manifests/registry.ollama.ai/library/%s/ directory and the blobs/ files its manifest
    names; then restart Ollama; or
  - build it from weights you have (GGUF or safetensors) with `+"`ollama create %s -f Modelfile`"+`.
Then run docsift models pull again: it skips models Ollama already has.`, err, m, c, m, strings.SplitN(m, ":", 2)[0], m)
	}
	return err
}
