package ollama

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/ollamatest"
)

// TestOllamaEmbedSplitsOverContext: a text longer than the model's context
// is embedded in parts whose vectors are combined, so that its end counts
// as much as its start, while the rest of its batch is embedded as it is.
// With the context learnt (Check) the parts are split before sending; without
// it the server's refusal splits them; either way no input is truncated.
func TestOllamaEmbedSplitsOverContext(t *testing.T) {
	for _, checked := range []bool{true, false} {
		ol := ollamatest.New(t, ollamatest.Model{Name: "fit", Dim: 64, Context: 40})
		e, err := NewEmbedder(Config{URL: ol.URL, EmbedModel: "fit", BatchSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if checked {
			if err := e.Check(ctx); err != nil {
				t.Fatal(err)
			}
			if e.Context() != 40 {
				t.Fatalf("Context() = %d, want 40 from /api/show", e.Context())
			}
		}
		long := "🙂 " + strings.Repeat("alpha beta ", 30) + strings.Repeat("omega psi ", 30)
		short := []string{"a short text", "another short text"}
		want, err := e.Embed(ctx, short)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Embed(ctx, []string{short[0], long, short[1]})
		if err != nil {
			t.Fatalf("checked %v: Embed with an over-long text: %v", checked, err)
		}
		if len(got) != 3 || cosine(got[0], want[0]) < 0.9999 || cosine(got[2], want[1]) < 0.9999 {
			t.Fatalf("checked %v: the batch's other texts changed: %d vectors", checked, len(got))
		}
		start := cosine(got[1], ollamatest.Embedding("alpha beta", 64))
		end := cosine(got[1], ollamatest.Embedding("omega psi", 64))
		if start < 0.4 || end < 0.4 {
			t.Errorf("checked %v: the long text's vector matches its start %.2f and its end %.2f; both should count", checked, start, end)
		}
		for _, req := range ol.EmbedRequests() {
			if req.Truncate == nil || *req.Truncate {
				t.Errorf("checked %v: an embed request asked to truncate", checked)
			}
		}
		if _, err := e.EmbedQuery(ctx, long); err != nil {
			t.Errorf("checked %v: EmbedQuery with an over-long query: %v", checked, err)
		}
	}
}

// TestOllamaEmbedSplitsSeldomWhenChecked: with the context known, an
// over-long chunk is split before it is sent, so the server refuses nothing.
func TestOllamaEmbedSplitsSeldomWhenChecked(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: "fit", Dim: 16, Context: 100, NumCtx: 60})
	e, err := NewEmbedder(Config{URL: ol.URL, EmbedModel: "fit"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if e.Context() != 60 {
		t.Fatalf("Context() = %d, want 60: the Modelfile's num_ctx is under the model's 100", e.Context())
	}
	before := ol.Calls("/api/embed")
	var words []string
	for i := range 500 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	if _, err := e.Embed(ctx, []string{strings.Join(words, " ")}); err != nil {
		t.Fatal(err)
	}
	reqs := ol.EmbedRequests()[before:]
	sent := map[string]bool{}
	for _, r := range reqs {
		for _, in := range r.Input.([]any) {
			if sent[in.(string)] {
				t.Errorf("an input was sent twice: refused and split")
			}
			sent[in.(string)] = true
		}
	}
	if len(sent) < 2 {
		t.Errorf("the chunk went in %d parts, want several", len(sent))
	}
	last := reqs[len(reqs)-1]
	if n, _ := last.Options["num_ctx"].(float64); n != 60 {
		t.Errorf("num_ctx sent = %v, want 60", last.Options["num_ctx"])
	}
}

// TestOllamaEmbedShortTextOverContext: a text too short to split that the
// server still refuses is embedded truncated, rather than failing.
func TestOllamaEmbedShortTextOverContext(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: "fit", Dim: 16, Context: 4})
	e, err := NewEmbedder(Config{URL: ol.URL, EmbedModel: "fit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"a b c d e f g h"}); err != nil {
		t.Fatalf("Embed: %v", err)
	}
	// A refusal that splitting cannot cure still fails.
	ol.RemoveModel("fit")
	if _, err := e.Embed(context.Background(), []string{"a b c d e f g h"}); err == nil {
		t.Error("Embed of a missing model succeeded")
	}
}

func TestSplitHalves(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"aaaaaa bb cccccccc", []string{"aaaaaa bb", "cccccccc"}},
		{"文档搜索服务", []string{"文档搜", "索服务"}},
		{"abcdefgh", []string{"abcd", "efgh"}},
		{"a", []string{"a"}},
	} {
		got := splitHalves(c.in)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("splitHalves(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSplitToFit(t *testing.T) {
	text := strings.Repeat("word ", 1000)
	parts := splitToFit(text, 100, roughTokens)
	if len(parts) < 10 {
		t.Fatalf("%d parts of 1,000 words for 100 tokens each", len(parts))
	}
	words := 0
	for _, p := range parts {
		if n := roughTokens(p); n > 100 {
			t.Errorf("a part of %d tokens", n)
		}
		words += len(strings.Fields(p))
	}
	if words != 1000 {
		t.Errorf("the parts hold %d words, want all 1,000", words)
	}
	if got := splitToFit("short", 100, roughTokens); len(got) != 1 || got[0] != "short" {
		t.Errorf("a text that fits was split: %q", got)
	}
}

func TestRoughTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"the cat sat", 3},
		{"internationalisation", 4}, // 20 letters: 1 + 19/5
		{"文档搜索", 4},
		{"x := f(1)", 7},
		{"", 0},
	} {
		if got := roughTokens(c.in); got != c.want {
			t.Errorf("roughTokens(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	var est tokenEstimator
	cjk := strings.Repeat("文档搜索", 10)
	est.observe([]string{cjk}, 3*40+2) // a vocabulary that spends three tokens a character
	if got := est.estimate("服务"); got != 6 {
		t.Errorf("after learning 3 tokens a character, estimate = %d, want 6", got)
	}
	est.observe([]string{"a b"}, 100) // too short to learn from
	if got := est.estimate("服务"); got != 6 {
		t.Errorf("a short request's count changed the estimate to %d", got)
	}
}

func TestCombine(t *testing.T) {
	a, b := []float32{1, 0}, []float32{0, 1}
	got := combine([][]float32{a, b}, []string{"xxxx", "xxxx"})
	if d := got[0] - got[1]; d > 1e-6 || d < -1e-6 || cosine(got, a) < 0.7 {
		t.Errorf("combine of two equal parts = %v, want the unit bisector", got)
	}
	got = combine([][]float32{a, b}, []string{"xxxxxxxxx", "x"})
	if cosine(got, a) < 0.99 {
		t.Errorf("a long part and a short one: %v, want close to the long one's", got)
	}
}
