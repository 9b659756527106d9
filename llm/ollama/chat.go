package ollama

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

const (
	// ollamaNumCtx is the context window asked of the chat model. Ollama's
	// default (2K–4K tokens, by version) is smaller than a prompt with five
	// full chunks, and an overflowing prompt loses its beginning.
	ollamaNumCtx = 8192

	// ollamaTemperature is low: a grounded answer should restate the
	// sources, not improvise.
	ollamaTemperature = 0.2

	// ollamaMaxAnswerTokens bounds the answer so that a model that rambles
	// cannot hold a worker for the whole timeout.
	ollamaMaxAnswerTokens = 512
)

// Answerer writes grounded, cited answers with an Ollama chat model,
// on the least busy of its servers.
type Answerer struct {
	clients []*Client
	model   string

	mu      sync.Mutex
	context int // the chat model's context, 0 until Check learnt it
}

// NewAnswerer returns an answerer using cfg.ChatModel. It does no I/O;
// call Check to learn whether the server and model are there.
func NewAnswerer(cfg Config) (*Answerer, error) {
	cfg = cfg.WithDefaults()
	cs, err := NewClients(cfg)
	if err != nil {
		return nil, err
	}
	return &Answerer{clients: cs, model: cfg.ChatModel}, nil
}

// Model names the answerer as "ollama:<model>", the answer_model reported to
// API clients.
func (a *Answerer) Model() string { return "ollama:" + CanonicalModelName(a.model) }

// Client is the connection to the first server, for health checks and pulls.
func (a *Answerer) Client() *Client { return a.clients[0] }

// Check reports whether Ollama answers and has the chat model, able to
// chat, on every server that answers, and learns its context.
func (a *Answerer) Check(ctx context.Context) error {
	f, err := checkModelOn(ctx, a.clients, a.model, "completion")
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.context = f.Context
	a.mu.Unlock()
	return nil
}

// numCtx is the context asked of the chat model: ollamaNumCtx, or less
// when the model holds less.
func (a *Answerer) numCtx() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.context > 0 {
		return min(a.context, ollamaNumCtx)
	}
	return ollamaNumCtx
}

// Answer streams a grounded answer from the chat model. With no sources it
// returns llm.NoSourcesAnswer without calling the model: there is nothing to
// ground an answer in. Reasoning blocks (<think>…</think>) are removed from
// both the deltas and the answer. Cancelling ctx (a client that went
// away) returns at once, while the model's answer is read to its end in
// the background (see chatToEnd). An answer truncated at the length limit is
// returned with a *llm.TruncatedAnswerError. A server that cannot be reached is
// passed over for another before the answer has begun.
func (a *Answerer) Answer(ctx context.Context, query string, sources []llm.Source, onDelta func(string)) (string, error) {
	if len(sources) == 0 {
		if onDelta != nil {
			onDelta(llm.NoSourcesAnswer)
		}
		return llm.NoSourcesAnswer, nil
	}
	numCtx := a.numCtx()
	system, user := GroundedPromptTokens(query, sources, numCtx-ollamaMaxAnswerTokens)
	stream := true
	req := &api.ChatRequest{
		Model: a.model,
		Messages: []api.Message{
			{Role: "system", Content: system},
			{Role: "user", Content: user},
		},
		Stream: &stream,
		// Reasoning adds latency and nothing to restating sources. Models
		// that cannot think accept false; those that think anyway have
		// their reasoning stripped below.
		Think: &api.ThinkValue{Value: false},
		Options: map[string]any{
			"num_ctx":     numCtx,
			"temperature": ollamaTemperature,
			"num_predict": ollamaMaxAnswerTokens,
		},
	}

	var (
		answer     strings.Builder
		filter     thinkFilter
		done       bool
		doneReason string
		started    bool
	)
	emit := func(s string) {
		if s == "" {
			return
		}
		answer.WriteString(s)
		if onDelta != nil {
			onDelta(s)
		}
	}
	var err error
	for _, c := range byPreference(a.clients) {
		err = callOn(c, func(c *Client) error {
			err := c.chatToEnd(ctx, req, func(r api.ChatResponse) {
				started = true
				emit(filter.Write(r.Message.Content))
				if r.Done {
					done, doneReason = true, r.DoneReason
				}
			})
			if err == nil && !done {
				err = errIncompleteStream
			}
			if err != nil {
				return c.wrap("chat "+a.model, c.modelError(a.model, err))
			}
			return nil
		})
		if started || !endpointDown(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return "", err
	}
	emit(filter.Flush())
	out := strings.TrimRightFunc(answer.String(), unicode.IsSpace)
	if out == "" {
		return "", fmt.Errorf("llm: ollama chat %s: %w", a.model, errEmptyAnswer)
	}
	if doneReason == "length" {
		return out, &llm.TruncatedAnswerError{Model: a.Model(), Tokens: ollamaMaxAnswerTokens}
	}
	return out, nil
}

var errEmptyAnswer = errors.New("the model returned an empty answer")

// chatToEnd streams req on c, handing each response to each, and never
// closes the stream midway. When ctx ends first it returns ctx.Err() at
// once and reads the rest of the stream in the background, handing none of
// it on. Ollama (0.17.4, the version tested) can keep one of the model's
// slots for good when a client closes a streamed chat midway: its handler
// stops reading while the generation waits to hand it the next token. With
// one slot, the default, every later answer then waits for its timeout
// until the server unloads the model, which it does not do while answers
// wait. An abandoned answer's remaining tokens (at most
// ollamaMaxAnswerTokens) are the smaller loss. The stream's own deadline
// is the configured timeout, whoever is waiting for it.
func (c *Client) chatToEnd(ctx context.Context, req *api.ChatRequest, each func(api.ChatResponse)) error {
	if err := ctx.Err(); err != nil {
		return err // not worth starting
	}
	var (
		mu        sync.Mutex
		abandoned bool // returned on ctx's end before the stream's
		finished  bool // the stream has ended
	)
	ended := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		defer cancel()
		err := c.api.Chat(sctx, req, func(r api.ChatResponse) error {
			mu.Lock()
			defer mu.Unlock()
			if ctx.Err() == nil {
				each(r)
			}
			return nil
		})
		if sctx.Err() != nil {
			// The client stops reading quietly when its context ends.
			err = sctx.Err()
		}
		mu.Lock()
		finished = true
		if abandoned {
			c.health.busy.Add(-1)
		}
		mu.Unlock()
		ended <- err
	}()
	select {
	case err := <-ended:
		if ctx.Err() != nil {
			return ctx.Err() // what came after it was not handed on
		}
		return err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			abandoned = true
			// The server is still busy with it after callOn stops counting.
			c.health.busy.Add(1)
		}
		return ctx.Err()
	}
}

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinkFilter removes <think>…</think> blocks from a stream of text pieces,
// including tags split across pieces, and the blank space a model leaves
// before its answer. Text after an unclosed <think> is reasoning that never
// finished, and is dropped.
type thinkFilter struct {
	pending string // a held-back tail that may be the start of a tag
	inThink bool
	started bool // a visible non-space character has been emitted
}

// Write takes the next piece of model output and returns what can be shown
// now.
func (f *thinkFilter) Write(piece string) string {
	s := f.pending + piece
	f.pending = ""
	var out strings.Builder
	for s != "" {
		tag := thinkOpen
		if f.inThink {
			tag = thinkClose
		}
		if i := strings.Index(s, tag); i >= 0 {
			if !f.inThink {
				f.show(&out, s[:i])
			}
			s = s[i+len(tag):]
			f.inThink = !f.inThink
			continue
		}
		// No full tag: hold back a tail that could begin one.
		keep := partialSuffix(s, tag)
		if !f.inThink {
			f.show(&out, s[:len(s)-keep])
		}
		f.pending = s[len(s)-keep:]
		break
	}
	return out.String()
}

// Flush returns what is held back once the stream has ended.
func (f *thinkFilter) Flush() string {
	var out strings.Builder
	if !f.inThink {
		f.show(&out, f.pending)
	}
	f.pending = ""
	return out.String()
}

func (f *thinkFilter) show(out *strings.Builder, s string) {
	if !f.started {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return
		}
		f.started = true
	}
	out.WriteString(s)
}

// partialSuffix returns the length of the longest suffix of s that is a
// proper prefix of tag.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}
