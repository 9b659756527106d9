package search

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docsift/docsift/llm"
)

// Stream receives a query's progress as it happens: the chunks once
// retrieved, then the answer in pieces as the model writes it. Either field
// may be nil.
type Stream struct {
	Chunks func(results []Result, warnings []string)
	Delta  func(piece string)
}

// Answer is an answer and the model that wrote it.
type Answer struct {
	Text     string
	Model    string
	Warnings []string // why results or answer are degraded, if they are
}

// Response is the outcome of a query: the chunks found and an answer citing
// them as [n], n counting from 1 in Chunks.
type Response struct {
	Answer
	Chunks []Result
}

// ErrAnswerBroken means the answer model failed after part of its answer was
// streamed: the client has the beginning and should be told it is
// incomplete.
var ErrAnswerBroken = errors.New("the answer model failed mid-answer")

// brokenAnswer is ErrAnswerBroken for one model's failure, with the
// failure itself, for the log: the client is told only that the answer is
// incomplete (the server says ErrAnswerBroken in its own words).
type brokenAnswer struct {
	model string
	err   error
}

func (b *brokenAnswer) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrAnswerBroken, b.model, b.err)
}
func (b *brokenAnswer) Unwrap() []error { return []error{ErrAnswerBroken, b.err} }

// Query finds an owner's k best chunks for query, within the documents
// filter allows (nil: all), and answers from them. With a stream, the
// chunks and the answer's pieces are also handed over as they come. The
// error is the search's, the client's own going away (ctx.Err()), or
// ErrAnswerBroken: a query never fails because the chat model is down
// before it said anything.
func (s *Service) Query(ctx context.Context, owner, query string, k int, filter *Filter, stream *Stream) (*Response, error) {
	results, warnings, err := s.SearchFiltered(ctx, owner, query, k, filter)
	if err != nil {
		return nil, err
	}
	var onDelta func(string)
	if stream != nil {
		if stream.Chunks != nil {
			stream.Chunks(results, warnings)
		}
		onDelta = stream.Delta
	}
	ans, err := s.answer(ctx, query, chunkSources(results), warnings, onDelta)
	return &Response{Answer: ans, Chunks: results}, err
}

// answer asks the configured answerer and, when it fails before saying
// anything, the extractive one, adding a warning that says why.
func (s *Service) answer(ctx context.Context, query string, sources []llm.Source, warnings []string, onDelta func(string)) (Answer, error) {
	streamed := false
	var relay func(string)
	if onDelta != nil {
		relay = func(d string) { streamed = true; onDelta(d) }
	}
	start := time.Now()
	text, err := s.answerer.Answer(ctx, query, sources, relay)
	model := s.answerer.Model()
	if truncated := (*llm.TruncatedAnswerError)(nil); errors.As(err, &truncated) {
		warnings, err = append(warnings, truncated.Error()), nil // usable, but incomplete
	}
	if err == nil {
		s.metrics.Answered(model, time.Since(start))
	}
	switch {
	case err == nil:
		return Answer{Text: text, Model: model, Warnings: warnings}, nil
	case ctx.Err() != nil:
		return Answer{Warnings: warnings}, ctx.Err()
	case streamed:
		// The stream's 200 is sent, and its request logged as one.
		s.log.Warn("answer model failed mid-answer", "model", model, "err", err)
		return Answer{Text: text, Model: model, Warnings: warnings}, &brokenAnswer{model: model, err: err}
	}
	s.log.Warn("answer model failed; answering extractively", "model", model, "err", err)
	text, _ = s.fallback.Answer(ctx, query, sources, onDelta)
	warnings = append(warnings, "the answer model "+model+" failed ("+llm.Describe(err)+"); the answer is extractive")
	return Answer{Text: text, Model: s.fallback.Model(), Warnings: warnings}, nil
}

// chunkSources turns results into an answerer's sources, in order, so that
// [n] in the answer cites results[n-1].
func chunkSources(results []Result) []llm.Source {
	sources := make([]llm.Source, len(results))
	for i, r := range results {
		sources[i] = llm.Source{Title: r.DocumentName, Page: r.Chunk.Page, Text: r.Chunk.Text, Lang: r.Lang}
	}
	return sources
}
