package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/ollama/ollama/api"
)

// outcome is what a probe saw, in the terms docsift cares about: the HTTP
// status (0 for an error inside a 200 stream), the error text, and a few
// facts of a successful answer.
type outcome struct {
	Status int
	Err    string
	Facts  string
}

// probe is one request sent to both servers.
type probe struct {
	name string
	run  func(ctx context.Context, c *api.Client) (string, error)
	// errPrefix, when set, compares only the start of the error text: the
	// rest names the cause, which differs (the real server cannot reach
	// its registry; the stand-in's registry does not know the model).
	errPrefix string
}

func observe(ctx context.Context, c *api.Client, p probe) outcome {
	facts, err := p.run(ctx, c)
	var o outcome
	o.Facts = facts
	var se api.StatusError
	switch {
	case errors.As(err, &se):
		o.Status, o.Err = se.StatusCode, se.ErrorMessage
	case err != nil:
		o.Err = err.Error()
	default:
		o.Status = 200
	}
	if p.errPrefix != "" && strings.HasPrefix(o.Err, p.errPrefix) {
		o.Err = p.errPrefix + "…"
	}
	return o
}

// TestRealOllamaStandInParity sends the same requests to the real server
// and to the stand-in and wants the same statuses, error texts and shapes.
// A failure here means the stand-in no longer tells docsift's other tests
// the truth.
func TestRealOllamaStandInParity(t *testing.T) {
	real := ollamareal.Start(t)
	fake := ollamatest.New(t,
		ollamatest.Model{Name: realEmbedModel, Dim: realDim, Context: realEmbedCtx},
		ollamatest.Model{Name: realChatModel, Context: 32768},
	)
	u, err := url.Parse(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	fakeClient := api.NewClient(u, &http.Client{})
	ctx := realCtx(t)

	no, yes := false, true
	long := strings.Repeat("the water boils at one hundred degrees at sea level ", 80)
	embed := func(req api.EmbedRequest) func(context.Context, *api.Client) (string, error) {
		return func(ctx context.Context, c *api.Client) (string, error) {
			r, err := c.Embed(ctx, &req)
			if err != nil {
				return "", err
			}
			dim := 0
			if len(r.Embeddings) > 0 {
				dim = len(r.Embeddings[0])
			}
			return fmt.Sprintf("model=%s vectors=%d dim=%d", r.Model, len(r.Embeddings), dim), nil
		}
	}
	embedCount := func(req api.EmbedRequest) func(context.Context, *api.Client) (string, error) {
		return func(ctx context.Context, c *api.Client) (string, error) {
			r, err := c.Embed(ctx, &req)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("prompt_eval_count=%d", r.PromptEvalCount), nil
		}
	}
	show := func(name string) func(context.Context, *api.Client) (string, error) {
		return func(ctx context.Context, c *api.Client) (string, error) {
			r, err := c.Show(ctx, &api.ShowRequest{Model: name})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("capabilities=%v context=%d", r.Capabilities, contextLength(r)), nil
		}
	}
	chat := func(req api.ChatRequest) func(context.Context, *api.Client) (string, error) {
		return func(ctx context.Context, c *api.Client) (string, error) {
			var last api.ChatResponse
			err := c.Chat(ctx, &req, func(r api.ChatResponse) error { last = r; return nil })
			if err != nil {
				return "", err
			}
			// How many messages a stream takes, and what text they
			// carry, hang on the tokens the random weights draw: three
			// may decode to nothing, and the stream is then its closing
			// message alone (one CI run in a few).
			return fmt.Sprintf("done=%v done_reason=%s eval_count=%d", last.Done, last.DoneReason, last.EvalCount), nil
		}
	}
	hi := []api.Message{{Role: "user", Content: "hi"}}
	truncate := map[string]any{"num_predict": 3}

	probes := []probe{
		{name: "show bare name", run: show("tinyembed")},
		{
			name: "tags",
			run: func(ctx context.Context, c *api.Client) (string, error) {
				r, err := c.List(ctx)
				if err != nil {
					return "", err
				}
				var facts []string
				for _, m := range r.Models {
					facts = append(facts, fmt.Sprintf("%s digest=%t", m.Name, regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(m.Digest)))
				}
				// The order is no fact: the real server lists the newest
				// first by the second, and models of the same second in
				// a Go map's order (one CI run listed them the other way).
				slices.Sort(facts)
				return strings.Join(facts, " "), nil
			},
		},
		{name: "show other case", run: show("TinyEmbed")},
		{name: "show library/", run: show("library/tinyembed:latest")},
		{name: "show chat model", run: show(realChatModel)},
		{name: "show missing", run: show("nope")},
		{name: "show other tag", run: show("tinyembed:v2")},
		{name: "embed", run: embed(api.EmbedRequest{Model: "TinyEmbed", Input: []string{"a", "b"}})},
		{name: "embed a string", run: embed(api.EmbedRequest{Model: realEmbedModel, Input: "a"})},
		{name: "embed nothing", run: embed(api.EmbedRequest{Model: realEmbedModel, Input: []string{}})},
		{name: "embed a number", run: embed(api.EmbedRequest{Model: realEmbedModel, Input: 42})},
		{name: "embed missing model", run: embed(api.EmbedRequest{Model: "nope", Input: "a"})},
		{name: "embed with a chat model", run: embed(api.EmbedRequest{Model: realChatModel, Input: "a"})},
		{name: "token count", run: embedCount(api.EmbedRequest{Model: realEmbedModel, Input: []string{"the water boils", "at one hundred degrees"}})},
		{name: "over context, truncate unset", run: embedCount(api.EmbedRequest{Model: realEmbedModel, Input: long})},
		{name: "over context, truncate", run: embedCount(api.EmbedRequest{Model: realEmbedModel, Input: long, Truncate: &yes})},
		{name: "over num_ctx", run: embedCount(api.EmbedRequest{Model: realEmbedModel, Input: long, Options: map[string]any{"num_ctx": 64}})},
		{name: "over context, no truncate", run: embedCount(api.EmbedRequest{Model: realEmbedModel, Input: long, Truncate: &no})},
		{name: "over context, unknown token", run: embedCount(api.EmbedRequest{Model: realEmbedModel, Input: "🙂 " + long, Truncate: &yes})},
		{name: "chat streamed, truncated", run: chat(api.ChatRequest{Model: realChatModel, Messages: hi, Options: truncate})},
		{name: "chat whole, truncated", run: chat(api.ChatRequest{Model: realChatModel, Messages: hi, Options: truncate, Stream: &no})},
		{name: "chat missing model", run: chat(api.ChatRequest{Model: "nope", Messages: hi})},
		{name: "chat with an embedding model", run: chat(api.ChatRequest{Model: realEmbedModel, Messages: hi})},
		{name: "chat thinking", run: chat(api.ChatRequest{Model: realChatModel, Messages: hi, Think: &api.ThinkValue{Value: true}})},
		{name: "chat not thinking", run: chat(api.ChatRequest{Model: realChatModel, Messages: hi, Options: truncate, Think: &api.ThinkValue{Value: false}})},
		{
			name: "pull unknown",
			run: func(ctx context.Context, c *api.Client) (string, error) {
				var statuses []string
				err := c.Pull(ctx, &api.PullRequest{Model: "no-such-model"}, func(p api.ProgressResponse) error {
					statuses = append(statuses, p.Status)
					return nil
				})
				return fmt.Sprint(statuses), fmt.Errorf("statuses %q: %w", statuses, err)
			},
			errPrefix: `statuses ["pulling manifest"]: pull model manifest: `,
		},
	}
	for _, p := range probes {
		want := observe(ctx, real.Client(), p)
		got := observe(ctx, fakeClient, p)
		t.Logf("%s: %+v", p.name, want)
		if got != want {
			t.Errorf("%s:\n real      %+v\n stand-in  %+v", p.name, want, got)
		}
	}
}
