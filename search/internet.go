package search

import (
	"context"
	"errors"
	"fmt"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/websearch"
)

// ErrWebSearch means the configured search instance failed or is down.
var ErrWebSearch = errors.New("internet search failed")

// NoWebResults is the answer of an internet search that found nothing.
const NoWebResults = "The internet search found nothing for this query."

// WebResponse is the outcome of an internet search: the results and an
// answer citing them as [n], n counting from 1 in Results.
type WebResponse struct {
	Answer
	Results []websearch.Result
}

// Internet answers query from up to k web results of the configured search
// instance. It returns ErrWebNotConfigured when there is none, and an error
// wrapping ErrWebSearch when it fails.
func (s *Service) Internet(ctx context.Context, query string, k int) (*WebResponse, error) {
	if s.web == nil {
		return nil, ErrWebNotConfigured
	}
	results, err := s.web.Search(ctx, query, k)
	if err != nil {
		s.log.Warn("internet search failed", "err", err)
		reason := "the search instance failed"
		if f := (*websearch.Failure)(nil); errors.As(err, &f) {
			reason = f.Reason
		}
		return nil, fmt.Errorf("%w: %s", ErrWebSearch, reason)
	}
	if len(results) == 0 {
		return &WebResponse{Answer: Answer{Text: NoWebResults, Model: llm.ExtractiveModel}, Results: []websearch.Result{}}, nil
	}
	ans, err := s.answer(ctx, query, webSources(results), nil, nil)
	if err != nil {
		return nil, err
	}
	return &WebResponse{Answer: ans, Results: results}, nil
}

// webSources turns search results into sources for an answerer, so that
// [n] in the answer cites results[n-1].
func webSources(results []websearch.Result) []llm.Source {
	sources := make([]llm.Source, len(results))
	for i, r := range results {
		title := r.Title
		if title == "" {
			title = r.URL
		} else {
			title += " (" + r.URL + ")"
		}
		text := r.Snippet
		if text == "" {
			text = r.Title
		}
		sources[i] = llm.Source{Title: title, Text: text}
	}
	return sources
}
