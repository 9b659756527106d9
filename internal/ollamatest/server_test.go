package ollamatest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

func client(t *testing.T, s *Server) *api.Client {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(u, http.DefaultClient)
}

func TestWireFormats(t *testing.T) {
	s := New(t, Model{Name: "emb", Dim: 8}, Model{Name: "chat:1b"})
	c := client(t, s)
	ctx := context.Background()

	if err := c.Heartbeat(ctx); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	if v, err := c.Version(ctx); err != nil || v != Version {
		t.Errorf("version = %q, %v", v, err)
	}
	list, err := c.List(ctx)
	if err != nil || len(list.Models) != 2 || list.Models[0].Name != "chat:1b" || list.Models[1].Name != "emb:latest" {
		t.Errorf("tags = %+v, %v", list, err)
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: "emb"})
	if err != nil || len(show.Capabilities) != 1 || show.Capabilities[0] != "embedding" || show.ModelInfo["nomic-bert.embedding_length"] != float64(8) {
		t.Errorf("show = %+v, %v", show, err)
	}
	var se api.StatusError
	if _, err := c.Show(ctx, &api.ShowRequest{Model: "nope"}); !errors.As(err, &se) || se.StatusCode != 404 || !strings.Contains(se.ErrorMessage, "not found") {
		t.Errorf("show of a missing model: %v", err)
	}

	// One string, as well as a list, is valid input.
	emb, err := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: "hello world"})
	if err != nil || len(emb.Embeddings) != 1 || len(emb.Embeddings[0]) != 8 {
		t.Errorf("embed of a string = %+v, %v", emb, err)
	}
	emb, err = c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: []string{}})
	if err != nil || len(emb.Embeddings) != 0 {
		t.Errorf("embed of nothing = %+v, %v", emb, err)
	}
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: 42}); !errors.As(err, &se) || se.StatusCode != 400 {
		t.Errorf("embed of a number: %v", err)
	}

	// Not streamed: one response, done.
	noStream := false
	var got []api.ChatResponse
	err = c.Chat(ctx, &api.ChatRequest{Model: "chat:1b", Stream: &noStream, Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(r api.ChatResponse) error { got = append(got, r); return nil })
	if err != nil || len(got) != 1 || !got[0].Done || got[0].Message.Content != DefaultReply {
		t.Errorf("unstreamed chat = %+v, %v", got, err)
	}
	// Streamed: pieces, then an empty done message.
	got = nil
	err = c.Chat(ctx, &api.ChatRequest{Model: "chat:1b", Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(r api.ChatResponse) error { got = append(got, r); return nil })
	if err != nil || len(got) < 3 || !got[len(got)-1].Done || got[0].Done || got[0].Message.Role != "assistant" {
		t.Errorf("streamed chat = %+v, %v", got, err)
	}
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: "chat:1b", Input: "x"}); err != nil {
		t.Errorf("a chat model embeds too: %v", err)
	}

	s.AddLibrary(Model{Name: "new"})
	var statuses []string
	if err := c.Pull(ctx, &api.PullRequest{Model: "new"}, func(p api.ProgressResponse) error {
		statuses = append(statuses, p.Status)
		return nil
	}); err != nil || statuses[len(statuses)-1] != "success" {
		t.Errorf("pull: %q, %v", statuses, err)
	}
	if _, err := c.Show(ctx, &api.ShowRequest{Model: "new:latest"}); err != nil {
		t.Errorf("pulled model is missing: %v", err)
	}
}

func TestFaults(t *testing.T) {
	s := New(t, Model{Name: "emb", Dim: 4})
	c := client(t, s)
	ctx := context.Background()
	embed := func() error {
		_, err := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: "x"})
		return err
	}

	s.FailNext("/api/embed", 2, http.StatusBadGateway)
	for i := 0; i < 2; i++ {
		var se api.StatusError
		if err := embed(); !errors.As(err, &se) || se.StatusCode != http.StatusBadGateway {
			t.Errorf("failure %d: %v", i, err)
		}
	}
	if err := embed(); err != nil {
		t.Errorf("after the failures: %v", err)
	}
	if n := s.Calls("/api/embed"); n != 3 {
		t.Errorf("Calls = %d, want 3", n)
	}

	// A hung request ends when the client gives up, and hanging ends on Unhang.
	s.Hang("")
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Embed(hctx, &api.EmbedRequest{Model: "emb", Input: "x"})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("hung request: %v", err)
	}
	s.Unhang()
	if err := embed(); err != nil {
		t.Errorf("after Unhang: %v", err)
	}

	s.Stop()
	// A connection the client kept from before may fail first (EOF); once
	// it is dropped, dialing is refused.
	refused := false
	for i := 0; i < 3 && !refused; i++ {
		err := embed()
		if err == nil {
			t.Fatal("stopped server answered")
		}
		refused = strings.Contains(err.Error(), "refused")
	}
	if !refused {
		t.Error("stopped server: connections are not refused")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := embed(); err != nil {
		t.Errorf("restarted server: %v", err)
	}
}

func TestEmbeddingIsDeterministicAndSimilar(t *testing.T) {
	a := Embedding("the cat sat on the mat", 64)
	b := Embedding("the cat sat on the mat", 64)
	c := Embedding("a cat on a mat", 64)
	d := Embedding("quarterly revenue forecast", 64)
	var ab, ac, ad float32
	for i := range a {
		ab += a[i] * b[i]
		ac += a[i] * c[i]
		ad += a[i] * d[i]
	}
	if ab < 0.999 || ac <= ad {
		t.Errorf("similarities: same %f, overlapping %f, unrelated %f", ab, ac, ad)
	}
}

// TestBehavesAsTheRealServer covers what the stand-in copies from the real
// Ollama (checked against it by llm's TestRealOllamaStandInParity).
func TestBehavesAsTheRealServer(t *testing.T) {
	s := New(t, Model{Name: "emb", Dim: 8, Context: 16}, Model{Name: "chat"})
	c := client(t, s)
	ctx := context.Background()
	var se api.StatusError

	// Names: any case, implied :latest, optional library/ and registry host.
	for _, name := range []string{"emb", "EMB", "emb:latest", "library/emb", "example.com/library/emb:latest"} {
		if _, err := c.Show(ctx, &api.ShowRequest{Model: name}); err != nil {
			t.Errorf("show %q: %v", name, err)
		}
	}
	if _, err := c.Show(ctx, &api.ShowRequest{Model: "emb:v2"}); !errors.As(err, &se) || se.StatusCode != 404 {
		t.Errorf("another tag: %v", err)
	}
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: "nope", Input: "x"}); !errors.As(err, &se) ||
		se.ErrorMessage != `model "nope" not found, try pulling it first` {
		t.Errorf("embed of a missing model: %v", err)
	}

	// prompt_eval_count counts tokens, two more an input.
	r, err := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: []string{"one two", "three, four"}})
	if err != nil || r.PromptEvalCount != 4+5 {
		t.Errorf("token count = %v, %v; want 9", r, err)
	}

	// Over the context (16): truncated unless truncate is false; refused when the
	// kept part holds an unknown token.
	long := strings.Repeat("word ", 40)
	no, yes := false, true
	r, err = c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: long})
	if err != nil || r.PromptEvalCount != 16 {
		t.Errorf("over-long input: %v, %v; want truncated at 16", r, err)
	}
	truncated, _ := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: strings.Repeat("word ", 14)})
	if truncated == nil || fmt.Sprint(truncated.Embeddings[0]) != fmt.Sprint(r.Embeddings[0]) {
		t.Error("the truncated input's vector is not that of its first tokens")
	}
	r, err = c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: long, Options: map[string]any{"num_ctx": 8}})
	if err != nil || r.PromptEvalCount != 8 {
		t.Errorf("num_ctx 8: %v, %v", r, err)
	}
	for _, req := range []api.EmbedRequest{
		{Model: "emb", Input: long, Truncate: &no},
		{Model: "emb", Input: "🙂 " + long, Truncate: &yes},
	} {
		if _, err := c.Embed(ctx, &req); !errors.As(err, &se) || se.StatusCode != 400 || se.ErrorMessage != errOverContext {
			t.Errorf("embed %.20q truncate=%v: %v", req.Input, *req.Truncate, err)
		}
	}
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: "🙂 short", Truncate: &no}); err != nil {
		t.Errorf("an unknown token within the context: %v", err)
	}

	// num_predict truncates the answer: done_reason "length".
	noStream := false
	var got api.ChatResponse
	err = c.Chat(ctx, &api.ChatRequest{Model: "chat", Stream: &noStream, Messages: []api.Message{{Role: "user", Content: "hi"}},
		Options: map[string]any{"num_predict": 2}}, func(r api.ChatResponse) error { got = r; return nil })
	if err != nil || got.DoneReason != "length" || got.EvalCount != 2 || got.Message.Content != DefaultReply[:2*chatPieceRunes] {
		t.Errorf("truncated answer = %+v, %v", got, err)
	}
	// A prompt over num_ctx is truncated silently.
	err = c.Chat(ctx, &api.ChatRequest{Model: "chat", Stream: &noStream, Messages: []api.Message{{Role: "user", Content: long}},
		Options: map[string]any{"num_ctx": 10}}, func(r api.ChatResponse) error { got = r; return nil })
	if err != nil || got.PromptEvalCount != 10 || got.DoneReason != "stop" {
		t.Errorf("over-long prompt = %+v, %v", got, err)
	}
	if err := c.Chat(ctx, &api.ChatRequest{Model: "chat", Think: &api.ThinkValue{Value: true}},
		func(api.ChatResponse) error { return nil }); !errors.As(err, &se) || se.ErrorMessage != `"chat" does not support thinking` {
		t.Errorf("thinking asked of a model that cannot: %v", err)
	}

	// A runner dying mid-answer: an error line after some pieces.
	s.SetChatStreamError("an error was encountered while running the model: unexpected EOF")
	var pieces int
	err = c.Chat(ctx, &api.ChatRequest{Model: "chat", Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(api.ChatResponse) error { pieces++; return nil })
	if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), "unexpected EOF") || pieces == 0 {
		t.Errorf("runner death: %d pieces, then %#v", pieces, err)
	}
	s.SetChatStreamError("")

	// An unknown model's pull fails inside a 200 stream: a plain error.
	var statuses []string
	err = c.Pull(ctx, &api.PullRequest{Model: "nope"}, func(p api.ProgressResponse) error {
		statuses = append(statuses, p.Status)
		return nil
	})
	if err == nil || errors.As(err, &se) || err.Error() != "pull model manifest: file does not exist" || fmt.Sprint(statuses) != "[pulling manifest]" {
		t.Errorf("pull of an unknown model: %q, %#v", statuses, err)
	}
}

// TestModelFacts: /api/show gives the model's context and a Modelfile's
// num_ctx, the embed limit is the smaller, and /api/tags gives a digest
// that changes when the model is replaced under its name.
func TestModelFacts(t *testing.T) {
	s := New(t, Model{Name: "emb", Dim: 8, Context: 100, NumCtx: 20})
	c := client(t, s)
	ctx := context.Background()
	show, err := c.Show(ctx, &api.ShowRequest{Model: "emb"})
	if err != nil || show.ModelInfo["nomic-bert.context_length"] != float64(100) || !strings.Contains(show.Parameters, "num_ctx") || !strings.HasSuffix(show.Parameters, " 20") {
		t.Errorf("show: %v, model_info %v, parameters %q", err, show.ModelInfo, show.Parameters)
	}
	no := false
	words := strings.Repeat("word ", 30) // 32 tokens with [CLS] and [SEP]
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: words, Truncate: &no}); err == nil {
		t.Error("an input over the Modelfile's num_ctx was embedded")
	}
	if r, err := c.Embed(ctx, &api.EmbedRequest{Model: "emb", Input: words, Truncate: &no, Options: map[string]any{"num_ctx": 100}}); err != nil || r.PromptEvalCount != 32 {
		t.Errorf("the request's num_ctx over the Modelfile's: %v, %v", r, err)
	}
	digestOf := func() string {
		list, err := c.List(ctx)
		if err != nil || len(list.Models) != 1 {
			t.Fatalf("tags: %v, %v", list, err)
		}
		return list.Models[0].Digest
	}
	before := digestOf()
	if len(before) != 64 {
		t.Errorf("digest %q, want 64 hex digits as the real server gives", before)
	}
	s.SetDim("emb", 16)
	if digestOf() == before {
		t.Error("the digest did not change with the model")
	}

	if n := s.PeakInFlight("/api/embed"); n != 1 {
		t.Errorf("PeakInFlight after one request at a time = %d", n)
	}
}
