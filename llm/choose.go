package llm

import (
	"context"
	"fmt"
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

// ChooseEmbedder returns the embedder mode asks for and a sentence saying
// why it was chosen. In auto mode it is Ollama's when Ollama answers and has
// the model, else the built-in one. In ollama mode an unreachable Ollama is
// not an error: the server starts, and jobs wait for it (the reason says so).
func ChooseEmbedder(ctx context.Context, mode string, cfg OllamaConfig) (Embedder, string, error) {
	cfg = cfg.WithDefaults()
	switch mode {
	case ModeBuiltin:
		return NewBuiltin(), "--embedder builtin", nil
	case ModeOllama, ModeAuto:
	default:
		return nil, "", fmt.Errorf("--embedder must be auto, ollama or builtin, not %q", mode)
	}
	e, err := NewOllamaEmbedder(cfg)
	if err != nil {
		return nil, "", err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	err = e.Check(pctx)
	switch {
	case err == nil:
		return e, fmt.Sprintf("Ollama at %s has %s (%d dimensions)", cfg.URL, cfg.EmbedModel, e.Dim()), nil
	case mode == ModeOllama:
		return e, fmt.Sprintf("--embedder ollama, but the check failed (%v); indexing jobs wait and retry until Ollama answers", err), nil
	}
	return NewBuiltin(), fmt.Sprintf("Ollama is not usable (%v); using the built-in embedder", err), nil
}

// ChooseAnswerer is ChooseEmbedder for answers: Ollama's chat model, or
// extractive answers.
func ChooseAnswerer(ctx context.Context, mode string, cfg OllamaConfig) (Answerer, string, error) {
	cfg = cfg.WithDefaults()
	switch mode {
	case ModeExtractive:
		return NewExtractive(), "--answerer extractive", nil
	case ModeOllama, ModeAuto:
	default:
		return nil, "", fmt.Errorf("--answerer must be auto, ollama or extractive, not %q", mode)
	}
	a, err := NewOllamaAnswerer(cfg)
	if err != nil {
		return nil, "", err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	err = a.Check(pctx)
	switch {
	case err == nil:
		return a, fmt.Sprintf("Ollama at %s has %s", cfg.URL, cfg.ChatModel), nil
	case mode == ModeOllama:
		return a, fmt.Sprintf("--answerer ollama, but the check failed (%v); queries answer extractively until Ollama answers", err), nil
	}
	return NewExtractive(), fmt.Sprintf("Ollama is not usable (%v); answers are extractive", err), nil
}
