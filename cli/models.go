package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

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
	f.StringVar(&o.ollama.URL, "ollama-url", llm.OllamaURLFromEnv(), "Ollama's address, or several comma-separated serving the same models: ingest spreads over them, queries go to the least busy ($OLLAMA_HOST sets the default)")
	f.StringVar(&o.ollama.EmbedModel, "embed-model", llm.DefaultEmbedModel, "Ollama embedding model")
	f.IntVar(&o.ollama.BatchSize, "embed-batch", llm.DefaultOllamaBatchSize, "most texts per Ollama embedding call (each call carries what the model embeds in about 0.5 s, up to this)")
	f.DurationVar(&o.ollama.Timeout, "ollama-timeout", llm.DefaultOllamaTimeout, "deadline of each Ollama call")
	if withAnswerer {
		f.StringVar(&o.answerer, "answerer", llm.ModeAuto, "auto, ollama or extractive: auto uses Ollama's chat model when it answers and has it")
		f.StringVar(&o.ollama.ChatModel, "chat-model", llm.DefaultChatModel, "Ollama chat model for answers")
	}
}

// chooseEmbedder picks the embedder and logs which and why, once. When
// Ollama was down at start, the dimension its model has in the store is
// told to the embedder, so a changed model is still refused.
func (o *modelOptions) chooseEmbedder(ctx context.Context, st store.ModelStore, log *slog.Logger) (llm.Embedder, error) {
	em, why, err := llm.ChooseEmbedder(ctx, o.embedder, o.ollama)
	if err != nil {
		return nil, err
	}
	if oe, ok := em.(*llm.OllamaEmbedder); ok && st != nil {
		owners, err := st.Owners()
		if err != nil {
			return nil, err
		}
		oe.SetModelKey(ollamaModelKey(oe, owners, log))
		if oe.Dim() == 0 {
			for _, om := range owners {
				if om.Model == oe.Model() {
					if err := oe.ExpectDim(om.Dim); err != nil {
						return nil, err
					}
					break
				}
			}
		}
	}
	log.Info("embedder chosen", "embedder", em.Model(), "why", why)
	return em, nil
}

// standbyEmbedder is the Ollama embedder for owners indexed with it when
// Ollama was not usable at start, named as those owners' vectors are.
func (o *modelOptions) standbyEmbedder(st store.ModelStore, log *slog.Logger) (*llm.OllamaEmbedder, error) {
	oe, err := llm.NewOllamaEmbedder(o.ollama)
	if err != nil {
		return nil, err
	}
	owners, err := st.Owners()
	if err != nil {
		return nil, err
	}
	oe.SetModelKey(ollamaModelKey(oe, owners, log))
	return oe, nil
}

// ollamaModelKey picks the name an Ollama embedder's vectors are recorded
// under. New indexes are keyed on the model's digest (DigestKey), so that a
// model replaced under its name (a newer nomic-embed-text pulled) is
// another embedding space: its owners are refused with a message that says
// to reindex, rather than searched with vectors that no longer compare.
// Owners indexed before digests were recorded keep the name they were
// recorded under, in whatever spelling ("ollama:TinyEmbed" is served by
// tinyembed:latest). With Ollama down at start (no digest) the digest key
// most owners use is taken.
func ollamaModelKey(oe *llm.OllamaEmbedder, owners map[string]store.OwnerModel, log *slog.Logger) string {
	nameKey, digestKey := oe.NameKey(), oe.DigestKey()
	named, keyed := map[string]int{}, map[string]int{} // owners by recorded key
	for _, om := range owners {
		for _, m := range []string{om.Model, om.Next} {
			name, digest, hasDigest := strings.Cut(strings.TrimPrefix(m, "ollama:"), "@")
			switch {
			case !strings.HasPrefix(m, "ollama:") || "ollama:"+llm.CanonicalModelName(name) != nameKey:
			case hasDigest && digest != "":
				keyed[m]++
			default:
				named[m]++
			}
		}
	}
	if len(named) > 0 {
		return mostUsed(named)
	}
	if digestKey == "" {
		if len(keyed) > 0 {
			return mostUsed(keyed)
		}
		return nameKey
	}
	for k, n := range keyed {
		if k != digestKey {
			log.Warn("the embedding model was replaced since some owners were indexed: their vectors do not match it; run `docsift reindex`",
				"model", nameKey, "indexed_with", k, "owners", n, "now", digestKey)
		}
	}
	return digestKey
}

// mostUsed is the key most owners use, the first in order on a tie.
func mostUsed(uses map[string]int) string {
	best := ""
	for k, n := range uses {
		if best == "" || n > uses[best] || (n == uses[best] && k < best) {
			best = k
		}
	}
	return best
}

// logEmbedSpeed measures the embedder on a few chunk-sized texts and logs
// its speed and what a typical upload costs, so that an operator on a slow
// CPU knows what to expect before the first upload. An Ollama embedder that
// did not answer its check is not measured: it would only time out.
func logEmbedSpeed(ctx context.Context, em llm.Embedder, log *slog.Logger) {
	if em.Dim() == 0 {
		return
	}
	perSec, err := llm.MeasureEmbedSpeed(ctx, em)
	if ctx.Err() != nil {
		return // the server is stopping
	}
	if err != nil {
		log.Warn("embedding speed not measured", "embedder", em.Model(), "err", err)
		return
	}
	upload := time.Duration(float64(llm.TypicalUploadChunks) / perSec * float64(time.Second))
	round := 100 * time.Millisecond
	if upload < time.Second {
		round = time.Millisecond // the built-in embedder's: not "0s"
	}
	log.Info("embedding speed", "embedder", em.Model(), "embeddings_per_s", fmt.Sprintf("%.1f", perSec),
		"typical_upload", fmt.Sprintf("%d chunks in about %s", llm.TypicalUploadChunks, upload.Round(round)))
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
			clients, err := llm.NewOllamaClients(o.ollama)
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
func pullModels(cmd *cobra.Command, c *llm.OllamaClient, models []string, update bool) error {
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
			if have && errors.Is(err, llm.ErrRegistryUnreachable) {
				return fmt.Errorf("%s: not updated, and the copy Ollama at %s has stays in use: %w", m, c, llm.ErrRegistryUnreachable)
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
func pullModel(cmd *cobra.Command, c *llm.OllamaClient, m string) error {
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
	if errors.Is(err, llm.ErrRegistryUnreachable) {
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
