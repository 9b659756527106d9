package ollama

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

// These tests run docsift's Ollama client against the real Ollama server
// (see internal/ollamareal) with small generated models. They skip when no
// server binary is built; `make test-ollama` builds one and requires them.
// What they assert is what the real server was seen to do; where the
// stand-in in internal/ollamatest differs, the stand-in was changed to
// match, and TestRealOllamaStandInParity keeps the two in step.

const (
	realEmbedModel = "tinyembed" // ollamareal.TinyEmbed
	realChatModel  = "tinychat"  // ollamareal.TinyChat
	realDim        = 128
	realEmbedCtx   = 512 // tinyembed's context length in tokens
)

// newRealOllama starts a real server holding the tiny models and returns a
// config for it.
func newRealOllama(t *testing.T) (*ollamareal.Server, Config) {
	t.Helper()
	srv := ollamareal.Start(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return srv, Config{
		HTTPClient: &http.Client{Transport: tr},
		URL:        srv.URL,
		EmbedModel: realEmbedModel,
		ChatModel:  realChatModel,
		BatchSize:  4,
		// A safety net, not a measure: an answer is 512 tokens and a shared
		// machine under load may take a minute for it.
		Timeout: 5 * time.Minute,
	}
}

func realCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestRealOllamaEmbedBatches(t *testing.T) {
	_, cfg := newRealOllama(t)
	ctx := realCtx(t)
	e := mustEmbedder(t, cfg)
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if e.Dim() != realDim {
		t.Fatalf("Dim() after Check = %d, want %d", e.Dim(), realDim)
	}

	texts := make([]string, 10)
	for i := range texts {
		texts[i] = ollamareal.Text(i*3, 20+i*10)
	}
	texts[7] = texts[2] // a repeat must give the same vector
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != realDim {
			t.Fatalf("vector %d has %d dimensions", i, len(v))
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Errorf("vector %d has squared norm %f", i, norm)
		}
	}
	if c := cosine(vecs[2], vecs[7]); c < 0.9999 {
		t.Errorf("the same text twice in a batch: cosine %f", c)
	}
	if c := cosine(vecs[0], vecs[1]); c > 0.9999 {
		t.Errorf("different texts got the same vector (cosine %f)", c)
	}
	// Order is kept: each text alone gives the vector it got in the batch.
	for _, i := range []int{0, 5, 9} {
		alone, err := e.Embed(ctx, texts[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine(alone[0], vecs[i]); c < 0.999 {
			t.Errorf("text %d alone vs in its batch: cosine %f (order lost?)", i, c)
		}
	}
	if q, err := e.EmbedQuery(ctx, texts[3]); err != nil || cosine(q, vecs[3]) < 0.999 {
		t.Errorf("EmbedQuery of a model without prefixes differs from Embed: %v", err)
	}
}

// TestRealOllamaModelNames: the server resolves a name without case, with
// an implied ":latest" and an optional "library/"; docsift keeps the name as
// typed, so its embedding space ("ollama:<name>") changes with the spelling
// although the vectors do not.
func TestRealOllamaModelNames(t *testing.T) {
	_, cfg := newRealOllama(t)
	ctx := realCtx(t)
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ref []float32
	for _, name := range []string{"tinyembed", "tinyembed:latest", "TinyEmbed", "library/tinyembed", "library/TINYEMBED:latest"} {
		if err := c.HasModel(ctx, name); err != nil {
			t.Errorf("HasModel(%q): %v", name, err)
			continue
		}
		cfg.EmbedModel = name
		e := mustEmbedder(t, cfg)
		if e.Model() != "ollama:tinyembed" {
			t.Errorf("Model() = %q, want ollama:tinyembed whatever the spelling", e.Model())
		}
		if err := e.Check(ctx); err != nil || e.Digest() == "" || e.Context() != realEmbedCtx {
			t.Errorf("Check with %q: %v, digest %q, context %d", name, err, e.Digest(), e.Context())
		}
		v, err := e.Embed(ctx, []string{"the water boils at one hundred degrees"})
		if err != nil {
			t.Errorf("Embed with %q: %v", name, err)
			continue
		}
		if ref == nil {
			ref = v[0]
		} else if cosine(ref, v[0]) < 0.9999 {
			t.Errorf("%q gives another vector than tinyembed", name)
		}
	}
	// A tag is part of the name.
	var mnf *llm.ModelNotFoundError
	if err := c.HasModel(ctx, "tinyembed:v2"); !errors.As(err, &mnf) {
		t.Errorf("HasModel(tinyembed:v2) = %v, want llm.ModelNotFoundError", err)
	}
}

func TestRealOllamaMissingModel(t *testing.T) {
	srv, cfg := newRealOllama(t)
	ctx := realCtx(t)
	cfg.EmbedModel, cfg.ChatModel = "nope", "nope"

	e := mustEmbedder(t, cfg)
	err := e.Check(ctx)
	var mnf *llm.ModelNotFoundError
	if !errors.As(err, &mnf) || llm.IsTransient(err) || !strings.Contains(err.Error(), "docsift models pull") {
		t.Errorf("Check of a missing embedding model: %v, want a permanent llm.ModelNotFoundError", err)
	}
	if _, err := e.Embed(ctx, []string{"x"}); !errors.As(err, &mnf) || llm.IsTransient(err) {
		t.Errorf("Embed with a missing model: %v, want a permanent llm.ModelNotFoundError", err)
	}
	a := mustAnswerer(t, cfg)
	if _, err := a.Answer(ctx, "q", []llm.Source{{Text: "t"}}, nil); !errors.As(err, &mnf) || llm.IsTransient(err) {
		t.Errorf("Answer with a missing model: %v, want a permanent llm.ModelNotFoundError", err)
	}

	// The texts differ by endpoint: /api/embed says more than the others.
	raw := srv.Client()
	var se api.StatusError
	_, err = raw.Embed(ctx, &api.EmbedRequest{Model: "nope", Input: "x"})
	if !errors.As(err, &se) || se.StatusCode != 404 || se.ErrorMessage != `model "nope" not found, try pulling it first` {
		t.Errorf("embed: %#v", err)
	}
	_, err = raw.Show(ctx, &api.ShowRequest{Model: "nope"})
	if !errors.As(err, &se) || se.StatusCode != 404 || se.ErrorMessage != `model 'nope' not found` {
		t.Errorf("show: %#v", err)
	}
	err = raw.Chat(ctx, &api.ChatRequest{Model: "nope"}, func(api.ChatResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != 404 || se.ErrorMessage != `model 'nope' not found` {
		t.Errorf("chat: %#v", err)
	}
}

// TestRealOllamaEmbedOverContext covers inputs longer than the model's
// context (512 tokens for tinyembed).
func TestRealOllamaEmbedOverContext(t *testing.T) {
	srv, cfg := newRealOllama(t)
	ctx := realCtx(t)
	e := mustEmbedder(t, cfg)
	raw := srv.Client()

	// Words all in the vocabulary: about one token each.
	long := strings.Repeat("the water boils at one hundred degrees at sea level ", 80)
	longer := long + strings.Repeat("people ask questions about money and law ", 50)

	// The server's own truncation would give texts that share their first
	// 510 tokens one vector; docsift splits them instead, so the longer
	// one's tail counts.
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if e.Context() != realEmbedCtx {
		t.Errorf("Context() = %d, want %d from /api/show", e.Context(), realEmbedCtx)
	}
	tail := strings.Repeat("people ask questions about money and law ", 50)
	vecs, err := e.Embed(ctx, []string{long, longer, tail})
	if err != nil {
		t.Fatalf("over-long English input: %v", err)
	}
	if a, b := cosine(vecs[0], vecs[2]), cosine(vecs[1], vecs[2]); b <= a {
		t.Errorf("the longer text is no closer to its tail (cosine %f) than the long one (%f): its end was truncated", b, a)
	}
	resp, err := raw.Embed(ctx, &api.EmbedRequest{Model: realEmbedModel, Input: long})
	if err != nil || resp.PromptEvalCount != realEmbedCtx {
		t.Errorf("truncate unset: prompt_eval_count %v, %v; want the truncation at %d", resp, err, realEmbedCtx)
	}
	// The truncation is at the smaller of num_ctx and the model's context.
	resp, err = raw.Embed(ctx, &api.EmbedRequest{Model: realEmbedModel, Input: long, Options: map[string]any{"num_ctx": 64}})
	if err != nil || resp.PromptEvalCount != 64 {
		t.Errorf("num_ctx 64: %v, %v; want 64 tokens", resp, err)
	}

	// Without truncation the input is refused.
	no := false
	_, err = raw.Embed(ctx, &api.EmbedRequest{Model: realEmbedModel, Input: long, Truncate: &no})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.ErrorMessage != "the input length exceeds the context length" {
		t.Errorf("truncate=false: %#v", err)
	}

	// With unknown tokens the truncation fails too: the server truncates the
	// tokens, turns them back into text ("[UNK]" for each unknown one),
	// and that text is longer in tokens than the context. tinyembed's
	// vocabulary has no CJK, so a long Chinese text (one chunk, no spaces)
	// is refused; an emoji does the same to a model whose vocabulary has
	// CJK (nomic-embed-text's).
	cjk := strings.Repeat("文档搜索服务把文件切成块并计算向量。", 60)
	_, err = raw.Embed(ctx, &api.EmbedRequest{Model: realEmbedModel, Input: cjk})
	if !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, "exceeds the context length") {
		t.Errorf("long CJK text, truncated by the server: %v, want a 400", err)
	}
	// docsift then embeds the text in parts, rather than fail the
	// document.
	for _, text := range []string{cjk, "🙂 " + long} {
		vecs, err := e.Embed(ctx, []string{"short text first", text, "short text last"})
		if err != nil || len(vecs) != 3 || len(vecs[1]) != realDim {
			t.Errorf("a batch holding a text the server cannot truncate (%.20q…): %d vectors, %v", text, len(vecs), err)
		}
	}
	if _, err := e.EmbedQuery(ctx, cjk); err != nil {
		t.Errorf("a query the server cannot truncate: %v", err)
	}
	if _, err := e.Embed(ctx, []string{"文档搜索服务"}); err != nil {
		t.Errorf("short CJK text: %v", err)
	}
}

// TestRealOllamaPromptEvalCount: prompt_eval_count counts tokens, [CLS]
// and [SEP] included, summed over a batch; for chat, the templated prompt,
// at most num_ctx.
func TestRealOllamaPromptEvalCount(t *testing.T) {
	srv, _ := newRealOllama(t)
	ctx := realCtx(t)
	c := srv.Client()
	count := func(in any) int {
		t.Helper()
		r, err := c.Embed(ctx, &api.EmbedRequest{Model: realEmbedModel, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		return r.PromptEvalCount
	}
	// Tokens, not inputs: [CLS] and [SEP] plus each word's pieces, and how
	// many pieces a word takes depends on the vocabulary made from the
	// shared text, so the counts are bounds.
	if n := count("hello"); n < 3 {
		t.Errorf("\"hello\": %d tokens, want at least 3 ([CLS] hello [SEP])", n)
	}
	a, b := count("the water boils"), count("at one hundred degrees")
	if a < 5 || b < 6 {
		t.Errorf("at least a token a word: %d and %d, want at least 5 and 6", a, b)
	}
	if n := count([]string{"the water boils", "at one hundred degrees"}); n != a+b {
		t.Errorf("batch of two: %d, want %d (the sum)", n, a+b)
	}

	chat := func(content string, numCtx int) int {
		t.Helper()
		noStream := false
		var n int
		err := c.Chat(ctx, &api.ChatRequest{Model: realChatModel, Stream: &noStream,
			Messages: []api.Message{{Role: "user", Content: content}},
			Options:  map[string]any{"num_predict": 1, "num_ctx": numCtx}},
			func(r api.ChatResponse) error { n = r.PromptEvalCount; return nil })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	short, long := chat("hi", 8192), chat(ollamareal.Text(0, 400), 8192)
	if short < 5 || long <= short+300 {
		t.Errorf("chat prompt_eval_count: %d for \"hi\", %d for 400 words", short, long)
	}
	// A prompt over num_ctx is truncated silently: no error, the count is num_ctx.
	if n := chat(ollamareal.Text(0, 400), 128); n != 128 {
		t.Errorf("400 words with num_ctx 128: prompt_eval_count %d, want 128", n)
	}
}

// TestRealOllamaKeepAlive: a model stays loaded for five minutes after a
// call unless the request says otherwise, and a later call reloads it.
func TestRealOllamaKeepAlive(t *testing.T) {
	srv, cfg := newRealOllama(t)
	ctx := realCtx(t)
	c := srv.Client()
	e := mustEmbedder(t, cfg)
	before, err := e.Embed(ctx, []string{"keep alive"})
	if err != nil {
		t.Fatal(err)
	}
	running := func() map[string]time.Time {
		ps, err := c.ListRunning(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string]time.Time)
		for _, m := range ps.Models {
			out[m.Name] = m.ExpiresAt
		}
		return out
	}
	exp, ok := running()[realEmbedModel+":latest"]
	if left := time.Until(exp); !ok || left < 4*time.Minute || left > 6*time.Minute {
		t.Errorf("after Embed: loaded %v, expires in %s; want about 5m", ok, left)
	}

	zero := api.Duration{Duration: 0}
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: realEmbedModel, Input: "x", KeepAlive: &zero}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ok := running()[realEmbedModel+":latest"]; !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("keep_alive 0 did not unload the model")
		}
		time.Sleep(20 * time.Millisecond) // polling the server, with a deadline
	}
	after, err := e.Embed(ctx, []string{"keep alive"})
	if err != nil {
		t.Fatalf("after unloading: %v", err)
	}
	if cosine(before[0], after[0]) < 0.9999 {
		t.Error("the reloaded model gives another vector")
	}
}

// TestRealOllamaConcurrent runs embeddings and answers at once, as ingest
// workers and queries do: all succeed, vectors as when run alone.
func TestRealOllamaConcurrent(t *testing.T) {
	_, cfg := newRealOllama(t)
	ctx := realCtx(t)
	e := mustEmbedder(t, cfg)
	a := mustAnswerer(t, cfg)
	texts := make([]string, 6)
	for i := range texts {
		texts[i] = ollamareal.Text(i*5, 60)
	}
	want, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := e.Embed(ctx, texts)
			if err != nil {
				errs <- err
				return
			}
			for i := range got {
				if c := cosine(got[i], want[i]); c < 0.999 {
					errs <- errors.New("a concurrent embedding differs from the one made alone")
					return
				}
			}
		}()
	}
	for q := 0; q < 2; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Answer(ctx, "q", []llm.Source{{Text: texts[q]}}, nil); answered(err) != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRealOllamaPullOffline: with the registry out of reach the pull fails
// at once, after a 200 and a first "pulling manifest" line, with a plain
// error rather than a status.
func TestRealOllamaPullOffline(t *testing.T) {
	_, cfg := newRealOllama(t)
	ctx := realCtx(t)
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	start := time.Now()
	err = c.Pull(ctx, "all-minilm", func(_, _ int64, status string) { statuses = append(statuses, status) })
	if err == nil {
		t.Fatal("pull succeeded offline")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("offline pull took %s", took)
	}
	if len(statuses) != 1 || statuses[0] != "pulling manifest" {
		t.Errorf("statuses = %q", statuses)
	}
	var se api.StatusError
	if errors.As(err, &se) || !strings.Contains(err.Error(), "pull model manifest") {
		t.Errorf("offline pull error: %#v", err)
	}
	if !errors.Is(err, ErrRegistryUnreachable) {
		t.Errorf("offline pull error %v is not ErrRegistryUnreachable", err)
	}
	// The model already present is no exception: a pull always asks the
	// registry.
	if err := c.Pull(ctx, realEmbedModel, nil); err == nil {
		t.Error("pulling a present model offline succeeded")
	}
}
