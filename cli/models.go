package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/docsift/docsift/internal/progress"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// modelOptions are the flags that say which models docsift uses.
type modelOptions struct {
	embedder, answerer string
	ollama             llm.OllamaConfig
}

// register adds the flags; embedder is the --embedder default (auto for a
// server, builtin where reproducible figures matter more).
func (o *modelOptions) register(f *pflag.FlagSet, withAnswerer bool, embedder string) {
	f.StringVar(&o.embedder, "embedder", embedder, "auto, ollama or builtin: auto uses Ollama when it answers and has the model")
	f.StringVar(&o.ollama.URL, "ollama-url", llm.OllamaURLFromEnv(), "Ollama's address ($OLLAMA_HOST sets the default)")
	f.StringVar(&o.ollama.EmbedModel, "embed-model", llm.DefaultEmbedModel, "Ollama embedding model")
	f.IntVar(&o.ollama.BatchSize, "embed-batch", llm.DefaultOllamaBatchSize, "most texts per Ollama embedding call (each call carries what the model embeds in about 2 s, up to this)")
	f.DurationVar(&o.ollama.Timeout, "ollama-timeout", llm.DefaultOllamaTimeout, "deadline of each Ollama call")
	if withAnswerer {
		f.StringVar(&o.answerer, "answerer", llm.ModeAuto, "auto, ollama or extractive: auto uses Ollama's chat model when it answers and has it")
		f.StringVar(&o.ollama.ChatModel, "chat-model", llm.DefaultChatModel, "Ollama chat model for answers")
	}
}

// chooseEmbedder picks the embedder and logs which and why, once. When
// Ollama was down at start, the dimension its model has in the store is
// told to the embedder, so a changed model is still refused.
func (o *modelOptions) chooseEmbedder(ctx context.Context, st *store.Store, log *slog.Logger) (llm.Embedder, error) {
	em, why, err := llm.ChooseEmbedder(ctx, o.embedder, o.ollama)
	if err != nil {
		return nil, err
	}
	log.Info("embedder chosen", "embedder", em.Model(), "why", why)
	if oe, ok := em.(*llm.OllamaEmbedder); ok && oe.Dim() == 0 && st != nil {
		owners, err := st.Owners()
		if err != nil {
			return nil, err
		}
		for _, om := range owners {
			if om.Model == oe.Model() {
				if err := oe.ExpectDim(om.Dim); err != nil {
					return nil, err
				}
				break
			}
		}
	}
	return em, nil
}

func (o *modelOptions) chooseAnswerer(ctx context.Context, log *slog.Logger) (llm.Answerer, error) {
	a, why, err := llm.ChooseAnswerer(ctx, o.answerer, o.ollama)
	if err != nil {
		return nil, err
	}
	log.Info("answerer chosen", "answerer", a.Model(), "why", why)
	return a, nil
}

func modelsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "models", Short: "Manage the Ollama models docsift uses"}
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
			c, err := llm.NewOllamaClient(o.ollama)
			if err != nil {
				return err
			}
			for _, m := range []string{o.ollama.WithDefaults().EmbedModel, o.ollama.WithDefaults().ChatModel} {
				if !update {
					err := c.HasModel(cmd.Context(), m)
					var missing *llm.ModelNotFoundError
					if err == nil {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: already in Ollama at %s (--update pulls it again)\n", m, c.URL())
						continue
					}
					if !errors.As(err, &missing) {
						return err
					}
				}
				if err := pullModel(cmd, c, m); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ready\n", m)
			}
			return nil
		},
	}
	o.register(pull.Flags(), true, llm.ModeAuto)
	pull.Flags().BoolVar(&update, "update", false, "pull models Ollama already has too (asks the registry for a newer version)")
	cmd.AddCommand(pull)
	return cmd
}

// pullModel pulls m with a progress bar. When Ollama cannot reach its
// registry the error says how to install the model without it: a pull asks
// the registry even for a model that is present, so an air-gapped server
// gets its models by copying or building them.
func pullModel(cmd *cobra.Command, c *llm.OllamaClient, m string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "pulling %s from Ollama at %s\n", m, c.URL())
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
	if errors.Is(err, llm.ErrRegistryUnreachable) {
		return fmt.Errorf(`%w

%s is not in Ollama at %s and Ollama cannot download it: its registry is out of reach
(no internet access, a firewall, or a proxy it cannot use). To install it without the registry:
  - on a machine with internet access, run `+"`ollama pull %s`"+`, then copy that
    machine's models directory (~/.ollama/models, or $OLLAMA_MODELS; for the Linux service
    /usr/share/ollama/.ollama/models) to this server's: all of it, or only the model's
    manifests/registry.ollama.ai/library/%s/ directory and the blobs/ files its manifest
    names; then restart Ollama; or
  - build it from weights you have (GGUF or safetensors) with `+"`ollama create %s -f Modelfile`"+`.
Then run docsift models pull again: it skips models Ollama already has.`, err, m, c.URL(), m, strings.SplitN(m, ":", 2)[0], m)
	}
	return err
}
