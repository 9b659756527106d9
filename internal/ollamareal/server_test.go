package ollamareal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// TestRealOllamaStartCreatesModels checks the harness itself: the server
// answers, reports the built version, and holds both generated models with
// the shapes and capabilities they were made with.
func TestRealOllamaStartCreatesModels(t *testing.T) {
	s := Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	show, err := c.Show(ctx, &api.ShowRequest{Model: TinyEmbed.Name})
	if err != nil {
		t.Fatal(err)
	}
	if show.ModelInfo["general.architecture"] != "bert" || show.ModelInfo["bert.embedding_length"] != float64(128) ||
		show.ModelInfo["bert.context_length"] != float64(512) {
		t.Errorf("tinyembed model_info = %v", show.ModelInfo)
	}
	if caps := capabilities(show); caps != "embedding" {
		t.Errorf("tinyembed capabilities = %s", caps)
	}
	show, err = c.Show(ctx, &api.ShowRequest{Model: TinyChat.Name})
	if err != nil {
		t.Fatal(err)
	}
	if show.ModelInfo["general.architecture"] != "qwen2" || show.ModelInfo["qwen2.context_length"] != float64(32768) {
		t.Errorf("tinychat model_info = %v", show.ModelInfo)
	}
	if caps := capabilities(show); caps != "completion" {
		t.Errorf("tinychat capabilities = %s", caps)
	}
	if !strings.Contains(show.Template, "<|im_start|>") {
		t.Errorf("tinychat template = %q", show.Template)
	}

	emb, err := c.Embed(ctx, &api.EmbedRequest{Model: TinyEmbed.Name, Input: []string{"hello world", Text(0, 50)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) != 128 {
		t.Fatalf("embed: %d vectors of %d", len(emb.Embeddings), len(emb.Embeddings[0]))
	}

	// A second server of the process reuses the models: they are there at
	// once, with no creation.
	s2 := StartConfig(t, Config{Models: []Model{}})
	if _, err := s2.Client().Show(ctx, &api.ShowRequest{Model: TinyChat.Name}); err != nil {
		t.Errorf("second server lacks the shared model: %v", err)
	}
}

func capabilities(show *api.ShowResponse) string {
	var out []string
	for _, c := range show.Capabilities {
		out = append(out, string(c))
	}
	return strings.Join(out, ",")
}

// TestReport: a failure report keeps what the server did, its last lines,
// and none of the model metadata a load prints.
func TestReport(t *testing.T) {
	s := &Server{log: &tailBuffer{limit: logLimit}}
	fmt.Fprintln(s.log, "[GIN-debug] POST   /api/chat")
	for i := 0; i < reportLines+5; i++ {
		fmt.Fprintf(s.log, "time=t%d level=INFO msg=step\n", i)
		fmt.Fprintln(s.log, "llama_model_loader: - kv   0: general.architecture str = qwen2")
		fmt.Fprintln(s.log, "print_info: file type   = F16")
	}
	fmt.Fprint(s.log, "[GIN] 2026/11/24 - 05:56:57 | 500 | 1.2s | 127.0.0.1 | POST \"/api/chat\"\n")
	lines := strings.Split(s.Report(), "\n")
	if len(lines) != reportLines {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), reportLines, s.Report())
	}
	if !strings.Contains(lines[len(lines)-1], "| 500 |") || lines[0] != "time=t6 level=INFO msg=step" {
		t.Errorf("report runs from %q to %q, want the last lines", lines[0], lines[len(lines)-1])
	}
	for _, l := range lines {
		if noise(l) {
			t.Errorf("model metadata or a route kept: %q", l)
		}
	}
}
