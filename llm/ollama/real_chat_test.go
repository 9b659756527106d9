package ollama

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

// Answers against the real Ollama server: see real_test.go.

func TestRealOllamaAnswerStreams(t *testing.T) {
	_, cfg := newRealOllama(t)
	ctx := realCtx(t)
	a := mustAnswerer(t, cfg)
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var deltas []string
	got, err := a.Answer(ctx, "what is docsift?",
		[]llm.Source{{Title: "readme", Text: "docsift is a search service."}},
		func(d string) { deltas = append(deltas, d) })
	// tinychat never emits a stop token: every answer runs to num_predict.
	var truncated *llm.TruncatedAnswerError
	if !errors.As(err, &truncated) {
		t.Fatalf("an answer run to num_predict: %v, want a llm.TruncatedAnswerError", err)
	}
	if strings.TrimSpace(got) == "" {
		t.Fatal("empty answer")
	}
	if len(deltas) < 10 {
		t.Errorf("%d deltas: the answer was not streamed in pieces", len(deltas))
	}
	// The answer drops trailing white space as unicode.IsSpace has it:
	// random weights end some answers in a vertical tab.
	if joined := strings.TrimRightFunc(strings.Join(deltas, ""), unicode.IsSpace); joined != got {
		t.Errorf("deltas do not add up to the answer:\n%q\n%q", joined, got)
	}
}

// TestRealOllamaChatNotStreamed checks the two response shapes docsift may
// meet and that num_predict ends an answer with done_reason "length".
func TestRealOllamaChatNotStreamed(t *testing.T) {
	srv, _ := newRealOllama(t)
	ctx := realCtx(t)
	c := srv.Client()
	msgs := []api.Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: "hi"}}
	opts := map[string]any{"num_predict": 7, "seed": 1}

	noStream := false
	var one []api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: realChatModel, Messages: msgs, Stream: &noStream, Options: opts},
		func(r api.ChatResponse) error { one = append(one, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || !one[0].Done || one[0].Message.Content == "" || one[0].Message.Role != "assistant" {
		t.Fatalf("unstreamed chat = %+v", one)
	}
	if one[0].DoneReason != "length" || one[0].EvalCount != 7 {
		t.Errorf("truncated by num_predict 7: done_reason %q, eval_count %d", one[0].DoneReason, one[0].EvalCount)
	}

	var many []api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: realChatModel, Messages: msgs, Options: opts},
		func(r api.ChatResponse) error { many = append(many, r); return nil }); err != nil {
		t.Fatal(err)
	}
	last := many[len(many)-1]
	if len(many) < 2 || !last.Done || last.Message.Content != "" || last.DoneReason != "length" {
		t.Fatalf("streamed chat ends with %+v", last)
	}
	var text strings.Builder
	for _, r := range many[:len(many)-1] {
		if r.Done {
			t.Error("done before the last message")
		}
		text.WriteString(r.Message.Content)
	}
	if text.String() != one[0].Message.Content {
		t.Errorf("same seed, streamed %q vs whole %q", text.String(), one[0].Message.Content)
	}
}

// TestRealOllamaAnswerCancel cancels an answer after its first piece: the
// caller gets a permanent cancellation and the server serves the next
// request at once. When the first stream was closed midway, the next
// request sometimes waited out its timeout (once in 44 runs here, under
// load): the server had kept the model's only slot (see chatToEnd).
func TestRealOllamaAnswerCancel(t *testing.T) {
	_, cfg := newRealOllama(t)
	ctx := realCtx(t)
	a := mustAnswerer(t, cfg)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pieces := 0
	_, err := a.Answer(cctx, "q", []llm.Source{{Text: ollamareal.Text(0, 100)}}, func(string) {
		pieces++
		cancel()
	})
	if !errors.Is(err, context.Canceled) || llm.IsTransient(err) {
		t.Fatalf("cancelled answer: %v, want a permanent context.Canceled", err)
	}
	if pieces == 0 {
		t.Error("cancelled before any piece")
	}
	start := time.Now()
	if _, err := a.Answer(ctx, "q", []llm.Source{{Text: "t"}}, nil); answered(err) != nil {
		t.Fatalf("answer after a cancel: %v", err)
	}
	t.Logf("next answer (512 tokens) took %s", time.Since(start))
}

// TestRealOllamaPromptOverContext builds docsift's own grounded prompt from
// Chinese sources that, at ~4 characters a token, would fit num_ctx twice
// over but do not: the token budget leaves out the lowest-ranked sources
// so that the server does not truncate the prompt (which it does silently,
// losing the instructions). The tiny model always stops at num_predict,
// which the answerer reports as a truncated answer.
func TestRealOllamaPromptOverContext(t *testing.T) {
	srv, cfg := newRealOllama(t)
	ctx := realCtx(t)
	var sources []llm.Source
	for i := 0; i < 12; i++ {
		sources = append(sources, llm.Source{Title: "doc", Text: strings.Repeat("文档搜索服务把文件切成块并计算向量。", 250)})
	}
	system, user := GroundedPrompt("这是什么？", sources)
	if n := strings.Count(user, "<source id="); n == 0 || n == len(sources) {
		t.Errorf("%d of %d sources kept, want some but not all", n, len(sources))
	}
	noStream := false
	var resp api.ChatResponse
	err := srv.Client().Chat(ctx, &api.ChatRequest{Model: realChatModel, Stream: &noStream,
		Messages: []api.Message{{Role: "system", Content: system}, {Role: "user", Content: user}},
		Options:  map[string]any{"num_ctx": ollamaNumCtx, "num_predict": 4}},
		func(r api.ChatResponse) error { resp = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if resp.PromptEvalCount >= ollamaNumCtx-ollamaMaxAnswerTokens {
		t.Errorf("prompt_eval_count %d, want the prompt within num_ctx %d less the answer's %d", resp.PromptEvalCount, ollamaNumCtx, ollamaMaxAnswerTokens)
	}
	if resp.DoneReason != "length" {
		t.Errorf("done_reason %q after num_predict 4, want length", resp.DoneReason)
	}
	var truncated *llm.TruncatedAnswerError
	text, err := mustAnswerer(t, cfg).Answer(ctx, "这是什么？", sources, nil)
	if !errors.As(err, &truncated) || text == "" || truncated.Tokens != ollamaMaxAnswerTokens {
		t.Errorf("Answer that ran to num_predict: %q, %v; want the text and a llm.TruncatedAnswerError", text, err)
	}
}

// TestRealOllamaEmbedModelAsChat: /api/show says the embedding model
// cannot chat, so Check refuses it, naming what it lacks, rather than
// letting every query find out (the server answers 400 "does not support
// chat"); the chat model as the embedding model is refused the same way.
func TestRealOllamaEmbedModelAsChat(t *testing.T) {
	_, cfg := newRealOllama(t)
	ctx := realCtx(t)
	chat := cfg
	chat.ChatModel = realEmbedModel
	a := mustAnswerer(t, chat)
	var mce *llm.ModelConfigError
	if err := a.Check(ctx); !errors.As(err, &mce) || !strings.Contains(err.Error(), "tinyembed") || !strings.Contains(err.Error(), "cannot do completion") {
		t.Errorf("Check of an embedding model as the chat model: %v", err)
	}
	_, err := a.Answer(ctx, "q", []llm.Source{{Text: "t"}}, nil)
	if err == nil || llm.IsTransient(err) || !strings.Contains(err.Error(), `"tinyembed" does not support chat`) {
		t.Errorf("Answer with an embedding model: %v", err)
	}
	emb := cfg
	emb.EmbedModel = realChatModel
	if err := mustEmbedder(t, emb).Check(ctx); !errors.As(err, &mce) || !strings.Contains(err.Error(), "cannot do embedding") {
		t.Errorf("Check of a chat model as the embedding model: %v", err)
	}
	if err := mustAnswerer(t, cfg).Check(ctx); err != nil {
		t.Errorf("Check of the chat model: %v", err)
	}
}

// TestRealOllamaRunnerKilled kills the model's runner process mid-answer,
// as an out-of-memory kill would: the server has already sent a 200, so
// the failure arrives as an error line in the stream.
func TestRealOllamaRunnerKilled(t *testing.T) {
	srv, cfg := newRealOllama(t)
	ctx := realCtx(t)
	a := mustAnswerer(t, cfg)
	var once sync.Once
	start := time.Now()
	_, err := a.Answer(ctx, "q", []llm.Source{{Text: "t"}}, func(string) {
		once.Do(func() {
			if n, err := srv.KillRunners(); err != nil || n == 0 {
				t.Errorf("KillRunners: %d, %v", n, err)
			}
		})
	})
	t.Logf("answer with its runner killed, after %s: %v (transient %v)", time.Since(start), err, llm.IsTransient(err))
	if err == nil {
		t.Fatal("the answer survived its runner")
	}
	// The server starts a new runner for the next request.
	start = time.Now()
	if _, err := a.Answer(ctx, "q", []llm.Source{{Text: "t"}}, nil); answered(err) != nil {
		t.Errorf("answer after the runner died: %v", err)
	}
	t.Logf("next answer after %s", time.Since(start))
}

// answered is err unless it only says the answer was truncated at its length
// limit, as every answer of tinychat is.
func answered(err error) error {
	var truncated *llm.TruncatedAnswerError
	if errors.As(err, &truncated) {
		return nil
	}
	return err
}
