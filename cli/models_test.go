package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/llm/ollama"
)

const (
	testEmbedModel = "nomic-embed-text"
	testChatModel  = "qwen2.5:1.5b"
)

func TestModelsPull(t *testing.T) {
	ol := ollamatest.New(t)
	ol.AddLibrary(ollamatest.Model{Name: testEmbedModel, Dim: 32})
	ol.AddLibrary(ollamatest.Model{Name: testChatModel})
	out := mustCLI(t, "models", "pull", "--ollama-url", ol.URL, "--embed-model", testEmbedModel, "--chat-model", testChatModel)
	if !strings.Contains(out, testEmbedModel+": ready") || !strings.Contains(out, testChatModel+": ready") {
		t.Fatalf("models pull printed %q", out)
	}
	c, _ := ollama.NewClient(ollama.Config{URL: ol.URL})
	if err := c.Check(context.Background(), testEmbedModel, testChatModel); err != nil {
		t.Fatalf("after pull: %v", err)
	}
	if _, err := runCLI(t, "models", "pull", "--ollama-url", ol.URL, "--embed-model", "no-such-model"); err == nil {
		t.Fatal("pulling an unknown model did not fail")
	}
}

// TestModelsPullSkipsPresent: models Ollama has are not pulled again (a
// pull asks the registry, which an air-gapped server cannot reach), unless
// --update says so.
func TestModelsPullSkipsPresent(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 32}, ollamatest.Model{Name: testChatModel})
	args := []string{"models", "pull", "--ollama-url", ol.URL, "--embed-model", testEmbedModel, "--chat-model", testChatModel}
	out := mustCLI(t, args...)
	if !strings.Contains(out, testEmbedModel+": already in Ollama") || !strings.Contains(out, testChatModel+": already in Ollama") {
		t.Fatalf("models pull printed %q", out)
	}
	if n := ol.Calls("/api/pull"); n != 0 {
		t.Fatalf("%d pulls of present models", n)
	}
	// Only the models the flags would have a server use.
	if out := mustCLI(t, append(args, "--embedder", "builtin")...); strings.Contains(out, testEmbedModel) || !strings.Contains(out, testChatModel+": already in Ollama") {
		t.Errorf("models pull --embedder builtin printed %q", out)
	}
	if _, err := runCLI(t, append(args, "--embedder", "builtin", "--answerer", "extractive")...); err == nil || !strings.Contains(err.Error(), "use no Ollama model: nothing to pull") {
		t.Errorf("models pull with no Ollama model: %v", err)
	}
	ol.AddLibrary(ollamatest.Model{Name: testEmbedModel, Dim: 32})
	ol.AddLibrary(ollamatest.Model{Name: testChatModel})
	mustCLI(t, append(args, "--update")...)
	if n := ol.Calls("/api/pull"); n != 2 {
		t.Fatalf("--update pulled %d models, want 2", n)
	}
}
