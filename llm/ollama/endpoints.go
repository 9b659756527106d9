package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

// Several Ollama servers, and how healthy and busy each one is.
//
// A server that cannot be reached (or fails with a 5xx, or times out) is
// left alone for a back-off that doubles with each failure, while the
// others take its work; the first success ends it. When every server is
// backing off, the one that was due first is tried anyway: a caller gets a
// fresh error to retry on rather than a wait.
const (
	firstBackoff = time.Second
	maxBackoff   = 30 * time.Second
)

// parseURLs parses a comma-separated list of servers, each as
// parseURL accepts it. A server named twice is an error: it would get
// two ingest batches at once.
func parseURLs(s string) ([]*url.URL, error) {
	var out []*url.URL
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == "" {
			return nil, fmt.Errorf("llm: ollama url %q: an empty server in the list", redact.Text(s))
		}
		u, err := parseURL(part)
		if err != nil {
			return nil, err
		}
		if seen[u.String()] {
			return nil, fmt.Errorf("llm: ollama url %q: %s is listed twice", redact.Text(s), redact.URL(u.String()))
		}
		seen[u.String()] = true
		out = append(out, u)
	}
	return out, nil
}

// endpointHealth is one server's load and back-off state.
type endpointHealth struct {
	busy atomic.Int32 // requests in flight

	mu        sync.Mutex
	downUntil time.Time
	backoff   time.Duration
}

// failed records a failure that says the server is unusable for now.
func (h *endpointHealth) failed(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.backoff = min(maxBackoff, max(firstBackoff, 2*h.backoff))
	h.downUntil = now.Add(h.backoff)
}

// succeeded ends a back-off.
func (h *endpointHealth) succeeded() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.backoff, h.downUntil = 0, time.Time{}
}

// due is when the server may be tried again: zero when it is usable now.
func (h *endpointHealth) due(now time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now.Before(h.downUntil) {
		return h.downUntil
	}
	return time.Time{}
}

// endpointDown reports whether err says the server, rather than the
// request, is the problem, so that another server should be tried.
func endpointDown(err error) bool {
	return llm.IsTransient(err) && !errors.Is(err, context.Canceled)
}

// byPreference orders clients for one request: usable servers first, least
// busy first (ties in list order), then the backing-off ones by when they
// are due.
func byPreference(clients []*Client) []*Client {
	now := time.Now()
	type ranked struct {
		c    *Client
		due  time.Time
		busy int32
	}
	rs := make([]ranked, len(clients))
	for i, c := range clients {
		rs[i] = ranked{c, c.health.due(now), c.health.busy.Load()}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return int(a.busy - b.busy)
	})
	out := make([]*Client, len(rs))
	for i, r := range rs {
		out[i] = r.c
	}
	return out
}

// onEach runs call on the clients in order of preference until one does
// not fail for a reason of its server's. It returns the last error when
// every server failed. call's requests go through callOn, which keeps each
// server's health and load up to date.
func onEach(ctx context.Context, clients []*Client, call func(*Client) error) error {
	var err error
	for _, c := range byPreference(clients) {
		if err = call(c); !endpointDown(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// callOn runs call on c, counting it as in flight and recording whether
// the server answered.
func callOn(c *Client, call func(*Client) error) error {
	c.health.busy.Add(1)
	defer c.health.busy.Add(-1)
	err := call(c)
	switch {
	case err == nil:
		c.health.succeeded()
	case endpointDown(err):
		c.health.failed(time.Now())
	}
	return err
}

// CanonicalModelName is a model name as Ollama resolves it, so that every
// spelling of one model records one name: lower-cased (Ollama matches names
// without case), without a registry host or the default "library/"
// namespace, and without the default ":latest" tag. "TinyEmbed",
// "tinyembed:latest" and "registry.ollama.ai/library/tinyembed" are all
// "tinyembed". The default tag is the part left out, not added, so that a
// name recorded in its short form before names were made canonical stays
// what it was.
func CanonicalModelName(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	if parts := strings.Split(name, "/"); len(parts) == 3 && strings.ContainsAny(parts[0], ".:") {
		name = parts[1] + "/" + parts[2] // a registry host
	}
	name = strings.TrimPrefix(name, "library/")
	return strings.TrimSuffix(name, ":latest")
}

// ModelFacts is what docsift needs to know of a model on one server.
type ModelFacts struct {
	// Context is the most tokens one input may hold: the smaller of the
	// model's trained context and a num_ctx its Modelfile sets, the
	// limit the server applies. 0 when the server did not say.
	Context      int
	Capabilities []string // "completion", "embedding", …
	Digest       string   // of the model's manifest, from /api/tags
}

// Can reports whether the model has a capability.
func (f *ModelFacts) Can(capability string) bool { return slices.Contains(f.Capabilities, capability) }

// ModelFacts asks the server about model: /api/show for its context and
// capabilities, /api/tags for its digest. A missing model is a
// *llm.ModelNotFoundError.
func (c *Client) ModelFacts(ctx context.Context, model string) (*ModelFacts, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	show, err := c.api.Show(ctx, &api.ShowRequest{Model: model})
	if err != nil {
		return nil, c.wrap("show "+model, c.modelError(model, err))
	}
	f := &ModelFacts{Context: contextLength(show)}
	for _, cp := range show.Capabilities {
		f.Capabilities = append(f.Capabilities, string(cp))
	}
	tags, err := c.api.List(ctx)
	if err != nil {
		return nil, c.wrap("tags", err)
	}
	want := CanonicalModelName(model)
	for _, m := range tags.Models {
		if CanonicalModelName(m.Name) == want {
			f.Digest = m.Digest
		}
	}
	return f, nil
}

// contextLength reads a model's effective context from /api/show: the
// trained length in model_info ("<architecture>.context_length"), capped at
// the num_ctx parameter when the Modelfile sets one.
func contextLength(show *api.ShowResponse) int {
	n := 0
	if arch, ok := show.ModelInfo["general.architecture"].(string); ok {
		n = jsonInt(show.ModelInfo[arch+".context_length"])
	}
	for line := range strings.SplitSeq(show.Parameters, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if v, err := strconv.Atoi(f[1]); err == nil && v > 0 && (n == 0 || v < n) {
				n = v
			}
		}
	}
	return n
}

// jsonInt reads a whole number decoded from JSON (a float64), or 0.
func jsonInt(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	}
	return 0
}

// checkModelOn checks that every reachable server has model with
// capability, all under one digest, and returns what the first reachable
// one says of it. An unreachable server is not an error while another
// answers (it is skipped until it comes back); a server that lacks the
// model, or has another model under its name, is.
func checkModelOn(ctx context.Context, clients []*Client, model, capability string) (*ModelFacts, error) {
	var first *ModelFacts
	var firstURL string
	var down error
	for _, c := range clients {
		var f *ModelFacts
		err := callOn(c, func(c *Client) (err error) {
			if _, err = c.Version(ctx); err == nil {
				f, err = c.ModelFacts(ctx, model)
			}
			return err
		})
		if endpointDown(err) && ctx.Err() == nil {
			down = err
			continue
		}
		if err != nil {
			return nil, err
		}
		if capability != "" && len(f.Capabilities) > 0 && !f.Can(capability) {
			return nil, &llm.ModelConfigError{Msg: fmt.Sprintf("model %s on the Ollama server at %s cannot do %s (it can: %s): choose a model that can", model, c.shown, capabilityWord(capability), strings.Join(f.Capabilities, ", "))}
		}
		if first == nil {
			first, firstURL = f, c.shown
			continue
		}
		if f.Digest != first.Digest {
			return nil, &llm.ModelConfigError{Msg: fmt.Sprintf("model %s differs between the Ollama servers at %s (digest %s) and %s (digest %s): every server must serve the same models", model, firstURL, llm.ShortDigest(first.Digest), c.shown, llm.ShortDigest(f.Digest))}
		}
	}
	if first == nil {
		return nil, down
	}
	return first, nil
}

// capabilityWord says what a capability is for, in messages.
func capabilityWord(capability string) string {
	switch capability {
	case "completion":
		return "completion (chat)"
	case "embedding":
		return "embedding"
	}
	return capability
}

// urlList joins the clients' URLs for messages.
func urlList(clients []*Client) string {
	urls := make([]string, len(clients))
	for i, c := range clients {
		urls[i] = c.shown
	}
	return strings.Join(urls, ", ")
}
