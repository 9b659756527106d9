package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
)

func TestChooseEmbedderAndAnswerer(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: "embed", Dim: 16}, ollamatest.Model{Name: "chat"})
	up := ollama.Config{URL: ol.URL, EmbedModel: "embed", ChatModel: "chat"}
	missing := ollama.Config{URL: ol.URL, EmbedModel: "absent", ChatModel: "absent"}
	down := ollama.Config{URL: "http://127.0.0.1:1", EmbedModel: "embed", ChatModel: "chat"}

	for _, c := range []struct {
		name, mode  string
		cfg         ollama.Config
		embedder    string
		answerer    string
		whyContains string
	}{
		{"auto with Ollama up", llm.ModeAuto, up, "ollama:embed", "ollama:chat", "has"},
		{"auto with the model missing", llm.ModeAuto, missing, "builtin-v2", "extractive", "docsift models pull"},
		{"auto with Ollama down", llm.ModeAuto, down, "builtin-v2", "extractive", "not usable"},
		{"ollama forced while down", llm.ModeOllama, down, "ollama:embed", "ollama:chat", "check failed"},
		{"ollama forced with the model missing", llm.ModeOllama, missing, "ollama:absent", "ollama:absent", "until the model is pulled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			em, why, err := llm.ChooseEmbedder(context.Background(), c.mode, ollama.RemoteEmbedder(c.cfg))
			if err != nil || em.Model() != c.embedder || !strings.Contains(why, c.whyContains) {
				t.Errorf("embedder = %v, %q, %v; want %s because …%s…", em, why, err, c.embedder, c.whyContains)
			}
			a, why, err := llm.ChooseAnswerer(context.Background(), c.mode, ollama.RemoteAnswerer(c.cfg))
			if err != nil || a.Model() != c.answerer || !strings.Contains(why, c.whyContains) {
				t.Errorf("answerer = %v, %q, %v; want %s because …%s…", a, why, err, c.answerer, c.whyContains)
			}
		})
	}
	// Down, what waits is said without the Go transport's words.
	if _, why, _ := llm.ChooseEmbedder(context.Background(), llm.ModeOllama, ollama.RemoteEmbedder(down)); !strings.Contains(why, "wait and retry") || strings.Contains(why, "dial tcp") {
		t.Errorf("embedder with Ollama down: %q", why)
	}
	if em, _, _ := llm.ChooseEmbedder(context.Background(), llm.ModeBuiltin, ollama.RemoteEmbedder(down)); em.Model() != "builtin-v2" {
		t.Errorf("builtin mode chose %s", em.Model())
	}
	if a, _, _ := llm.ChooseAnswerer(context.Background(), llm.ModeExtractive, ollama.RemoteAnswerer(up)); a.Model() != llm.ExtractiveModel {
		t.Errorf("extractive mode chose %s", a.Model())
	}
	if _, _, err := llm.ChooseEmbedder(context.Background(), "openai", ollama.RemoteEmbedder(up)); err == nil {
		t.Error("unknown embedder mode accepted")
	}
	if _, _, err := llm.ChooseAnswerer(context.Background(), "builtin", ollama.RemoteAnswerer(up)); err == nil {
		t.Error("unknown answerer mode accepted")
	}
}
