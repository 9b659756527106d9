package llm

import (
	"context"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/ollamatest"
)

// TestOllamaEmbedFitsOverContext: a text the server refuses as longer than
// the context although docsift asked it to truncate (its kept part holds
// an unknown token) is embedded from a shorter start, alone, while the
// rest of its batch is embedded as it is.
func TestOllamaEmbedFitsOverContext(t *testing.T) {
	ol := ollamatest.New(t, ollamatest.Model{Name: "fit", Dim: 16, Context: 40})
	e, err := NewOllamaEmbedder(OllamaConfig{URL: ol.URL, EmbedModel: "fit", BatchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	long := "🙂 " + strings.Repeat("words of a chunk that runs past the context ", 10)
	short := []string{"a short text", "another short text"}
	want, err := e.Embed(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Embed(ctx, []string{short[0], long, short[1]})
	if err != nil {
		t.Fatalf("Embed with an over-long text: %v", err)
	}
	if len(got) != 3 || cosine(got[0], want[0]) < 0.9999 || cosine(got[2], want[1]) < 0.9999 {
		t.Fatalf("the batch's other texts changed: %d vectors", len(got))
	}
	fitted, err := e.Embed(ctx, []string{shorterStart(shorterStart(long))})
	if err != nil || cosine(got[1], fitted[0]) < 0.9999 {
		t.Errorf("the over-long text's vector is not its start's (%v)", err)
	}
	if _, err := e.EmbedQuery(ctx, long); err != nil {
		t.Errorf("EmbedQuery with an over-long query: %v", err)
	}
	// A refusal that shortening cannot cure still fails.
	ol.RemoveModel("fit")
	if _, err := e.Embed(ctx, []string{long}); err == nil {
		t.Error("Embed of a missing model succeeded")
	}
}

func TestShorterStart(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"aaaaaa bb cccccccc", "aaaaaa"},
		{"文档搜索服务", "文档搜"},
		{"abcdefgh", "abcd"},
	} {
		if got := shorterStart(c.in); got != c.want {
			t.Errorf("shorterStart(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
