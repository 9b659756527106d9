package server

import (
	"errors"
	"net/http"

	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/websearch"
	"github.com/labstack/echo/v4"
)

// Internet search bounds: results are snippets handed to the answerer, so
// the same reasoning as top_k applies, with a lower ceiling.
const (
	defaultWebResults = 5
	maxWebResults     = 20
)

type internetRequest struct {
	Query *string  `json:"query"`
	TopK  *float64 `json:"top_k"`
}

type internetResponse struct {
	Answer      string             `json:"answer"`
	AnswerModel string             `json:"answer_model"`
	Results     []websearch.Result `json:"results"`
	Warnings    []string           `json:"warnings,omitempty"`
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
	resp, err := s.search.Internet(c.Request().Context(), query, k)
	switch {
	case errors.Is(err, search.ErrWebNotConfigured):
		return featureOff(err.Error())
	case errors.Is(err, search.ErrWebSearch):
		return errorf(http.StatusServiceUnavailable, "%s", err)
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, internetResponse{
		Answer: resp.Text, AnswerModel: resp.Model, Results: resp.Results, Warnings: resp.Warnings,
	})
}
