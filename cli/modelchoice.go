package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/store"
	"github.com/spf13/pflag"
)

// modelOptions are the flags that say which models docsift uses.
type modelOptions struct {
	embedder, answerer string
	ollama             ollama.Config
}

// register adds the flags; embedder is the --embedder default (auto for a
// server, builtin where reproducible figures matter more).
func (o *modelOptions) register(f *pflag.FlagSet, withAnswerer bool, embedder string) {
	f.StringVar(&o.embedder, "embedder", embedder, "auto, ollama or builtin: auto uses Ollama when it answers and has the model")
	f.StringVar(&o.ollama.URL, "ollama-url", ollama.URLFromEnv(), "Ollama's address, or several comma-separated serving the same models: ingest spreads over them, queries go to the least busy ($OLLAMA_HOST sets the default)")
	f.StringVar(&o.ollama.EmbedModel, "embed-model", ollama.DefaultEmbedModel, "Ollama embedding model")
	f.IntVar(&o.ollama.BatchSize, "embed-batch", ollama.DefaultBatchSize, "most texts per Ollama embedding call (each call carries what the model embeds in about 0.5 s, up to this)")
	f.DurationVar(&o.ollama.Timeout, "ollama-timeout", ollama.DefaultTimeout, "deadline of each Ollama call")
	if withAnswerer {
		f.StringVar(&o.answerer, "answerer", llm.ModeAuto, "auto, ollama or extractive: auto uses Ollama's chat model when it answers and has it")
		f.StringVar(&o.ollama.ChatModel, "chat-model", ollama.DefaultChatModel, "Ollama chat model for answers")
	}
}

// chooseEmbedder picks the embedder and logs which and why, once. When
// Ollama was down at start, the dimension its model has in the store is
// told to the embedder, so a changed model is still refused.
func (o *modelOptions) chooseEmbedder(ctx context.Context, st store.Backend, log *slog.Logger) (llm.Embedder, error) {
	em, why, err := llm.ChooseEmbedder(ctx, o.embedder, ollama.RemoteEmbedder(o.ollama))
	if err != nil {
		return nil, err
	}
	if oe, ok := em.(*ollama.Embedder); ok && st != nil {
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

// standbyEmbedders are the embedders a server keeps besides the one it
// chose: when Ollama was not usable at start (and not refused with
// --embedder builtin), owners whose vectors came from it keep it, and
// their jobs wait for it to come back.
func (o *modelOptions) standbyEmbedders(chosen llm.Embedder, st store.Backend, log *slog.Logger) []llm.Embedder {
	if _, isOllama := chosen.(*ollama.Embedder); isOllama || o.embedder == llm.ModeBuiltin {
		return nil
	}
	if oe, err := o.standbyEmbedder(st, log); err == nil {
		return []llm.Embedder{oe}
	}
	return nil
}

// standbyEmbedder is the Ollama embedder for owners indexed with it when
// Ollama was not usable at start, named as those owners' vectors are.
func (o *modelOptions) standbyEmbedder(st store.Backend, log *slog.Logger) (*ollama.Embedder, error) {
	oe, err := ollama.NewEmbedder(o.ollama)
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
func ollamaModelKey(oe *ollama.Embedder, owners map[string]store.OwnerModel, log *slog.Logger) string {
	nameKey, digestKey := oe.NameKey(), oe.DigestKey()
	named, keyed := map[string]int{}, map[string]int{} // owners by recorded key
	for _, om := range owners {
		for _, m := range []string{om.Model, om.Next} {
			name, digest, hasDigest := strings.Cut(strings.TrimPrefix(m, "ollama:"), "@")
			switch {
			case !strings.HasPrefix(m, "ollama:") || "ollama:"+ollama.CanonicalModelName(name) != nameKey:
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
	a, why, err := llm.ChooseAnswerer(ctx, o.answerer, ollama.RemoteAnswerer(o.ollama))
	if err != nil {
		return nil, err
	}
	log.Info("answerer chosen", "answerer", a.Model(), "why", why)
	return a, nil
}
