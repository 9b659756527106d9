package ollama

import (
	"context"
	"fmt"

	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/llm"
)

// RemoteEmbedder is cfg's embedding model as llm.ChooseEmbedder weighs it
// against the built-in embedder.
func RemoteEmbedder(cfg Config) llm.Remote[llm.Embedder] {
	cfg = cfg.WithDefaults()
	return llm.Remote[llm.Embedder]{
		Open: func() (llm.Embedder, func(context.Context) error, error) {
			e, err := NewEmbedder(cfg)
			if err != nil {
				return nil, nil, err
			}
			return e, e.Check, nil
		},
		Ready: func(e llm.Embedder) string {
			return fmt.Sprintf("Ollama at %s has %s (%d dimensions)", redact.Text(cfg.URL), cfg.EmbedModel, e.Dim())
		},
	}
}

// RemoteAnswerer is cfg's chat model as llm.ChooseAnswerer weighs it
// against extractive answers.
func RemoteAnswerer(cfg Config) llm.Remote[llm.Answerer] {
	cfg = cfg.WithDefaults()
	return llm.Remote[llm.Answerer]{
		Open: func() (llm.Answerer, func(context.Context) error, error) {
			a, err := NewAnswerer(cfg)
			if err != nil {
				return nil, nil, err
			}
			return a, a.Check, nil
		},
		Ready: func(llm.Answerer) string {
			return fmt.Sprintf("Ollama at %s has %s", redact.Text(cfg.URL), cfg.ChatModel)
		},
	}
}
