package server

import (
	"context"
	"net/http"

	"github.com/docsift/docsift/llm"
	"github.com/labstack/echo/v4"
)

// Internet search bounds: results are snippets handed to the answerer, so
// the same reasoning as top_k applies, with a lower ceiling.
const (
	defaultWebResults = 5
	maxWebResults     = 20
)

// WebSearcher finds pages on the web; *llm.Searx is one.
type WebSearcher interface {
	Search(ctx context.Context, query string, n int) ([]llm.WebResult, error)
}

type internetRequest struct {
	Query *string  `json:"query"`
	TopK  *float64 `json:"top_k"`
}

type internetResponse struct {
	Answer      string          `json:"answer"`
	AnswerModel string          `json:"answer_model"`
	Results     []llm.WebResult `json:"results"`
	Warnings    []string        `json:"warnings,omitempty"`
}

// searchInternet answers a query from a configured SearxNG-compatible
// search endpoint, with an answer grounded in the result snippets.
func (s *Server) searchInternet(c echo.Context) error {
	var req internetRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	query, k, err := checkQuery(req.Query, req.TopK, defaultWebResults, maxWebResults)
	if err != nil {
		return err
	}
	if s.cfg.Web == nil {
		return errorf(http.StatusServiceUnavailable, "internet search is not configured: set --searxng-url")
	}
	results, err := s.cfg.Web.Search(c.Request().Context(), query, k)
	if err != nil {
		s.log.Warn("internet search failed", "request_id", requestID(c), "err", err)
		return errorf(http.StatusServiceUnavailable, "internet search failed: %v", err)
	}
	if results == nil {
		results = []llm.WebResult{}
	}
	sources := llm.WebSources(results)
	resp := internetResponse{Results: results}
	resp.Answer, resp.AnswerModel, resp.Warnings, err = s.answer(c, query, sources, nil, nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}
