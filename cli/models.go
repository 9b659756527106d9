package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

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
	f.IntVar(&o.ollama.BatchSize, "embed-batch", llm.DefaultOllamaBatchSize, "texts per Ollama embedding call")
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
	pull := &cobra.Command{
		Use:   "pull",
		Short: "Pull the configured embedding and chat models into Ollama",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := llm.NewOllamaClient(o.ollama)
			if err != nil {
				return err
			}
			for _, m := range []string{o.ollama.WithDefaults().EmbedModel, o.ollama.WithDefaults().ChatModel} {
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
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ready\n", m)
			}
			return nil
		},
	}
	o.register(pull.Flags(), true, llm.ModeAuto)
	cmd.AddCommand(pull)
	return cmd
}
