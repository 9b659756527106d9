package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Modes of choosing a model, as the --embedder and --answerer flags take
// them.
const (
	ModeAuto       = "auto"
	ModeOllama     = "ollama"
	ModeBuiltin    = "builtin"
	ModeExtractive = "extractive"
)

// probeTimeout bounds the start-up check of Ollama in auto mode: a server
// that takes longer than this to say its version is not one to rely on.
const probeTimeout = 3 * time.Second

// Remote is a model on a model server (Ollama's, from llm/ollama), as
// choosing needs it: Open makes the model without reaching the server
// (called only in the modes that may use it), check says whether the
// server answers and holds the model, and Ready why it was chosen when it
// does.
type Remote[T any] struct {
	Open  func() (model T, check func(context.Context) error, err error)
	Ready func(T) string
}

// ChooseEmbedder returns the embedder mode asks for and a sentence saying
// why it was chosen. In auto mode it is the remote one when its server
// answers and has the model, else the built-in one. In ollama mode an
// unreachable server is not an error: the server starts, and jobs wait for
// it (the reason says so).
func ChooseEmbedder(ctx context.Context, mode string, remote Remote[Embedder]) (Embedder, string, error) {
	return choose(ctx, mode, modelChoice[Embedder]{
		flag: "--embedder", local: ModeBuiltin,
		localModel: func() Embedder { return NewBuiltin() },
		remote:     remote,
		waiting:    "indexing jobs wait and retry until Ollama answers",
		missing:    "indexing jobs fail until the model is pulled",
		instead:    "using the built-in embedder",
	})
}

// ChooseAnswerer is ChooseEmbedder for answers: the remote chat model, or
// extractive answers.
func ChooseAnswerer(ctx context.Context, mode string, remote Remote[Answerer]) (Answerer, string, error) {
	return choose(ctx, mode, modelChoice[Answerer]{
		flag: "--answerer", local: ModeExtractive,
		localModel: func() Answerer { return NewExtractive() },
		remote:     remote,
		waiting:    "queries answer extractively until Ollama answers",
		missing:    "queries answer extractively until the model is pulled",
		instead:    "answers are extractive",
	})
}

// modelChoice is what differs between choosing an embedder and an answerer:
// the flag, the local model that needs nothing, and the remote one.
type modelChoice[T any] struct {
	flag       string // the flag being decided, for messages
	local      string // the mode that names the local model
	localModel func() T
	remote     Remote[T]
	waiting    string // what happens while a forced Ollama is down
	missing    string // and while its model is not pulled
	instead    string // what auto mode uses when Ollama is not usable
}

// choose probes Ollama in auto and ollama modes. Auto falls back to the
// local model when the probe fails; ollama mode keeps Ollama's model and
// says what waits for it. A model that cannot do its job (a
// *ModelConfigError) is an error in both: it is the configuration that is
// wrong, and no wait mends it.
func choose[T any](ctx context.Context, mode string, c modelChoice[T]) (T, string, error) {
	var zero T
	switch mode {
	case c.local:
		return c.localModel(), c.flag + " " + c.local, nil
	case ModeOllama, ModeAuto:
	default:
		return zero, "", fmt.Errorf("%s must be %s, %s or %s, not %q", c.flag, ModeAuto, ModeOllama, c.local, mode)
	}
	m, check, err := c.remote.Open()
	if err != nil {
		return zero, "", err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	err = check(pctx)
	var mce *ModelConfigError
	switch {
	case errors.As(err, &mce):
		return zero, "", fmt.Errorf("%s: %w", c.flag, err)
	case err == nil:
		return m, c.remote.Ready(m), nil
	case mode == ModeOllama:
		then := c.waiting
		var mnf *ModelNotFoundError
		if errors.As(err, &mnf) {
			then = c.missing // not an outage: no wait mends it
		}
		return m, fmt.Sprintf("%s ollama, but the check failed (%s); %s", c.flag, Describe(err), then), nil
	}
	return c.localModel(), fmt.Sprintf("Ollama is not usable (%s); %s", Describe(err), c.instead), nil
}

// Start-up measurement of the embedder's speed.
const (
	// speedProbeTexts and speedProbeBytes make the probe: a few texts of
	// a typical chunk's size (about 400 words' worth of characters is the
	// chunker's target; 1,000 characters is a page's paragraph), enough to
	// time without holding start-up for long on a slow CPU (about 2.5 s
	// at nomic-embed-text's 1.6 embeddings/s on two cores).
	speedProbeTexts = 4
	speedProbeBytes = 1000

	// TypicalUploadChunks is the upload the start-up log prices: a
	// document of about 100 chunks (a 40-page PDF).
	TypicalUploadChunks = 100
)

// speedProbeSentences are cycled to make probe texts: ordinary prose, so
// that their token counts are a chunk's.
var speedProbeSentences = []string{
	"The service stores each uploaded document and splits its text into chunks of a few hundred words.",
	"Every chunk is embedded by the model and added to the owner's index, where queries find it by meaning.",
	"A query returns the most relevant chunks together with an answer that cites them by number.",
	"Pages keep their numbers, so that a reader can open the original document at the right place.",
	"Operators run the server on a laptop or a small virtual machine, without any other infrastructure.",
}

// MeasureEmbedSpeed times the embedding of a few chunk-sized texts with em
// and returns embeddings per second. Call it after the embedder's check,
// so that the model is loaded and the time is the model's, not the load's.
func MeasureEmbedSpeed(ctx context.Context, em Embedder) (float64, error) {
	texts := make([]string, speedProbeTexts)
	for i := range texts {
		var b strings.Builder
		for j := i; b.Len() < speedProbeBytes; j++ {
			fmt.Fprintf(&b, "%s (%d) ", speedProbeSentences[j%len(speedProbeSentences)], j)
		}
		texts[i] = b.String()
	}
	if InProcess(em) {
		// Its first texts fill its caches (stems, languages): the time
		// is its start, not its speed, which the second pass measures.
		if _, err := em.Embed(ctx, texts); err != nil {
			return 0, fmt.Errorf("llm: measuring the embedding speed: %w", err)
		}
	}
	start := time.Now()
	if _, err := em.Embed(ctx, texts); err != nil {
		return 0, fmt.Errorf("llm: measuring the embedding speed: %w", err)
	}
	return float64(len(texts)) / max(time.Since(start).Seconds(), 1e-9), nil
}
