package ollama

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

func manyTexts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text number %d about water", i)
	}
	return out
}

// TestOllamaIngestOneBatchInFlight: however many ingest calls run at once,
// one server is sent one batch at a time, so a query waits behind one
// batch at most.
func TestOllamaIngestOneBatchInFlight(t *testing.T) {
	srv, cfg := newOllamaTest(t)
	srv.SetDelay("/api/embed", 5*time.Millisecond)
	e := mustEmbedder(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() {
			_, err := e.Embed(context.Background(), manyTexts(10))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if srv.Calls("/api/embed") < 10 {
		t.Fatalf("%d embed calls for 30 texts in batches of at most 3", srv.Calls("/api/embed"))
	}
	if n := srv.PeakInFlight("/api/embed"); n != 1 {
		t.Errorf("%d ingest batches in flight at once on one server, want 1", n)
	}
}

// TestOllamaQueryCache: a repeated query costs the server nothing, and the
// caller may change the vector it gets.
func TestOllamaQueryCache(t *testing.T) {
	srv, cfg := newOllamaTest(t)
	e := mustEmbedder(t, cfg)
	ctx := context.Background()
	v1, err := e.EmbedQuery(ctx, "where is the water")
	if err != nil {
		t.Fatal(err)
	}
	v1[0] = 42
	v2, err := e.EmbedQuery(ctx, "where is the water")
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("/api/embed"); n != 1 {
		t.Errorf("%d embed calls for one query asked twice, want 1", n)
	}
	if v2[0] == 42 {
		t.Error("the cache handed out a vector a caller had changed")
	}
	if _, err := e.EmbedQuery(ctx, "another query"); err != nil || srv.Calls("/api/embed") != 2 {
		t.Errorf("a new query: %v, %d calls, want 2", err, srv.Calls("/api/embed"))
	}

	c := newQueryCache(2)
	c.put("a", []float32{1})
	c.put("b", []float32{2})
	c.get("a")
	c.put("c", []float32{3})
	if _, ok := c.get("b"); ok {
		t.Error("the least recently used entry was kept")
	}
	if _, ok := c.get("a"); !ok {
		t.Error("a recently used entry was dropped")
	}
}

// twoServers starts two stand-ins with the test models and a config
// listing both.
func twoServers(t *testing.T) (a, b *ollamatest.Server, cfg Config) {
	a, cfg = newOllamaTest(t)
	b = ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: testDim}, ollamatest.Model{Name: testChatModel})
	cfg.URL = a.URL + ", " + b.URL
	return a, b, cfg
}

// TestOllamaSeveralServers: ingest spreads its batches over the servers,
// one in flight on each; a stopped server is skipped, with back-off, while
// the other works; queries and answers go on.
func TestOllamaSeveralServers(t *testing.T) {
	a, b, cfg := twoServers(t)
	a.SetDelay("/api/embed", 5*time.Millisecond)
	b.SetDelay("/api/embed", 5*time.Millisecond)
	e := mustEmbedder(t, cfg)
	ctx := context.Background()
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(ctx, manyTexts(30)); err != nil {
		t.Fatal(err)
	}
	if a.Calls("/api/embed") < 3 || b.Calls("/api/embed") < 3 {
		t.Errorf("batches went %d to one server and %d to the other, want both used", a.Calls("/api/embed"), b.Calls("/api/embed"))
	}
	if a.PeakInFlight("/api/embed") != 1 || b.PeakInFlight("/api/embed") != 1 {
		t.Errorf("in flight at once: %d and %d, want 1 on each", a.PeakInFlight("/api/embed"), b.PeakInFlight("/api/embed"))
	}

	a.Stop()
	before := b.Calls("/api/embed")
	vecs, err := e.Embed(ctx, manyTexts(12))
	if err != nil || len(vecs) != 12 {
		t.Fatalf("Embed with one server stopped: %d vectors, %v", len(vecs), err)
	}
	if b.Calls("/api/embed")-before < 4 {
		t.Errorf("the live server got %d batches of 12 texts", b.Calls("/api/embed")-before)
	}
	if e.clients[0].health.due(time.Now()).IsZero() {
		t.Error("the stopped server is not backing off")
	}
	if _, err := e.EmbedQuery(ctx, "a query while one server is down"); err != nil {
		t.Errorf("EmbedQuery with one server stopped: %v", err)
	}
	an := mustAnswerer(t, cfg)
	if _, err := an.Answer(ctx, "q", []llm.Source{{Text: "t"}}, nil); err != nil {
		t.Errorf("Answer with one server stopped: %v", err)
	}
	if err := e.Check(ctx); err != nil {
		t.Errorf("Check with one of two servers stopped: %v", err)
	}

	// Both down: a prompt error, not a wait.
	b.Stop()
	if _, err := e.Embed(ctx, manyTexts(2)); err == nil || !llm.IsTransient(err) {
		t.Errorf("Embed with every server stopped: %v, want a transient error", err)
	}
}

// TestOllamaServersMustAgree: every server must have the models, the same
// ones; the error says which server lacks which model.
func TestOllamaServersMustAgree(t *testing.T) {
	ctx := context.Background()
	_, b, cfg := twoServers(t)
	b.RemoveModel(testEmbedModel)
	err := mustEmbedder(t, cfg).Check(ctx)
	var mnf *llm.ModelNotFoundError
	if !errors.As(err, &mnf) || mnf.URL != b.URL || mnf.Model != testEmbedModel {
		t.Errorf("Check with the model missing on one server: %v, want it to name %s and %s", err, b.URL, testEmbedModel)
	}

	_, b, cfg = twoServers(t)
	b.AddModel(ollamatest.Model{Name: testEmbedModel, Dim: testDim, Digest: "sha256:0123456789abcdef"})
	err = mustEmbedder(t, cfg).Check(ctx)
	if err == nil || !strings.Contains(err.Error(), "differs between the Ollama servers") || !strings.Contains(err.Error(), "0123456789ab") {
		t.Errorf("Check with another model under the name on one server: %v", err)
	}
}

func TestOllamaParseURLList(t *testing.T) {
	cs, err := NewClients(Config{URL: "localhost:1, http://10.0.0.2:11434/"})
	if err != nil || len(cs) != 2 || cs[0].URL() != "http://localhost:1" || cs[1].URL() != "http://10.0.0.2:11434" {
		t.Fatalf("two servers: %v, %v", cs, err)
	}
	for _, bad := range []string{"a:1,,b:2", "a:1,a:1", "a:1,ftp://b"} {
		if _, err := NewClients(Config{URL: bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewClient(Config{URL: "a:1,b:2"}); err == nil {
		t.Error("NewClient took two servers")
	}
}

// TestOllamaServerPreference: the least busy usable server first, servers
// backing off last.
func TestOllamaServerPreference(t *testing.T) {
	cs, err := NewClients(Config{URL: "a:1,b:1,c:1"})
	if err != nil {
		t.Fatal(err)
	}
	cs[0].health.busy.Store(2)
	cs[1].health.busy.Store(1)
	cs[2].health.failed(time.Now())
	got := byPreference(cs)
	if got[0] != cs[1] || got[1] != cs[0] || got[2] != cs[2] {
		t.Errorf("order %s, want b, a, then c (backing off)", urlList(got))
	}
	cs[2].health.failed(time.Now())
	if cs[2].health.backoff != 2*firstBackoff {
		t.Errorf("back-off after two failures %s, want %s", cs[2].health.backoff, 2*firstBackoff)
	}
	cs[2].health.succeeded()
	if !cs[2].health.due(time.Now()).IsZero() {
		t.Error("a success did not end the back-off")
	}
}

func TestCanonicalModelName(t *testing.T) {
	for in, want := range map[string]string{
		"tinyembed":                            "tinyembed",
		"TinyEmbed":                            "tinyembed",
		"tinyembed:latest":                     "tinyembed",
		"library/tinyembed":                    "tinyembed",
		"registry.ollama.ai/library/tinyembed": "tinyembed",
		"qwen2.5:1.5B":                         "qwen2.5:1.5b",
		"someone/model:v2":                     "someone/model:v2",
	} {
		if got := CanonicalModelName(in); got != want {
			t.Errorf("CanonicalModelName(%q) = %q, want %q", in, got, want)
		}
	}
	e := mustEmbedder(t, Config{EmbedModel: "Nomic-Embed-Text:latest"})
	if e.Model() != "ollama:nomic-embed-text" || e.task.query == "" {
		t.Errorf("Model() %q, query prefix %q: the spelling changed the model", e.Model(), e.task.query)
	}
}

// TestOllamaCapabilities: an embedding model as the chat model, or a chat
// model as the embedding model, is a start-up error naming the model and
// what it cannot do.
func TestOllamaCapabilities(t *testing.T) {
	_, cfg := newOllamaTest(t)
	ctx := context.Background()
	chat := cfg
	chat.ChatModel = testEmbedModel
	if err := mustAnswerer(t, chat).Check(ctx); err == nil || !strings.Contains(err.Error(), testEmbedModel) || !strings.Contains(err.Error(), "cannot do completion") {
		t.Errorf("Check of an embedding model as the chat model: %v", err)
	}
	for _, mode := range []string{llm.ModeAuto, llm.ModeOllama} {
		if _, _, err := llm.ChooseAnswerer(ctx, mode, RemoteAnswerer(chat)); err == nil || !strings.Contains(err.Error(), "--answerer") {
			t.Errorf("ChooseAnswerer(%s) with an embedding model as the chat model: %v, want a start-up error", mode, err)
		}
	}
	emb := cfg
	emb.EmbedModel = testChatModel
	if err := mustEmbedder(t, emb).Check(ctx); err == nil || !strings.Contains(err.Error(), testChatModel) || !strings.Contains(err.Error(), "cannot do embedding") {
		t.Errorf("Check of a chat model as the embedding model: %v", err)
	}
}

// TestOllamaModelReplaced: a model replaced under its name is noticed by
// the next Check.
func TestOllamaModelReplaced(t *testing.T) {
	srv, cfg := newOllamaTest(t)
	e := mustEmbedder(t, cfg)
	ctx := context.Background()
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if e.Digest() == "" {
		t.Fatal("no digest learnt")
	}
	srv.AddModel(ollamatest.Model{Name: testEmbedModel, Dim: testDim, Digest: "sha256:feedfacefeedface"})
	var re *llm.ModelReplacedError
	if err := e.Check(ctx); !errors.As(err, &re) || llm.IsTransient(err) {
		t.Errorf("Check after the model was replaced: %v, want a llm.ModelReplacedError", err)
	}
}

// TestOllamaAnswerTruncated: an answer stopped at num_predict comes with a
// llm.TruncatedAnswerError, the text intact.
func TestOllamaAnswerTruncated(t *testing.T) {
	srv, cfg := newOllamaTest(t)
	srv.SetReply(func(*api.ChatRequest) string { return strings.Repeat("word ", 2000) })
	text, err := mustAnswerer(t, cfg).Answer(context.Background(), "q", []llm.Source{{Text: "t"}}, nil)
	var truncated *llm.TruncatedAnswerError
	if !errors.As(err, &truncated) || text == "" || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a long answer: %d bytes, %v; want the text and a llm.TruncatedAnswerError", len(text), err)
	}
	srv.SetReply(nil)
	if _, err := mustAnswerer(t, cfg).Answer(context.Background(), "q", []llm.Source{{Text: "t"}}, nil); err != nil {
		t.Errorf("a short answer: %v", err)
	}
}

// TestOllamaAnswerFitsChatContext: with a chat model of a small context,
// the prompt is budgeted to it and num_ctx asks for no more.
func TestOllamaAnswerFitsChatContext(t *testing.T) {
	srv := ollamatest.New(t, ollamatest.Model{Name: "small-chat", Context: 2048})
	a := mustAnswerer(t, Config{URL: srv.URL, ChatModel: "small-chat"})
	ctx := context.Background()
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var sources []llm.Source
	for range 10 {
		sources = append(sources, llm.Source{Text: strings.Repeat("a sentence of a chunk. ", 100)})
	}
	if _, err := a.Answer(ctx, "q", sources, nil); err != nil {
		t.Fatal(err)
	}
	req := srv.ChatRequests()[0]
	if n, _ := req.Options["num_ctx"].(float64); n != 2048 {
		t.Errorf("num_ctx %v, want the model's 2048", req.Options["num_ctx"])
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += promptTokens(m.Content)
	}
	if prompt > 2048-ollamaMaxAnswerTokens {
		t.Errorf("prompt of %d tokens by the estimate for a context of 2048 less %d for the answer", prompt, ollamaMaxAnswerTokens)
	}
}
