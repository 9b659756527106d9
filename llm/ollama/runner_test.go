package ollama

import (
	"context"
	"strings"
	"testing"

	"github.com/docsift/docsift/llm"
)

// TestOllamaAnswerRunnerDies: the real server reports a runner that died
// mid-answer as an error line inside the 200 stream (seen in
// TestRealOllamaRunnerKilled); the answerer must fail with that message,
// not return the half answer.
func TestOllamaAnswerRunnerDies(t *testing.T) {
	srv, cfg := newOllamaTest(t)
	srv.SetChatStreamError("an error was encountered while running the model: unexpected EOF")
	var deltas int
	got, err := mustAnswerer(t, cfg).Answer(context.Background(), "q", []llm.Source{{Text: "t"}}, func(string) { deltas++ })
	if err == nil {
		t.Fatalf("answer %q despite the runner's death", got)
	}
	if !strings.HasPrefix(err.Error(), "llm: ollama chat ") || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("error %q does not say what happened", err)
	}
	if deltas == 0 {
		t.Error("no piece arrived before the error: the case is not the one under test")
	}
}
