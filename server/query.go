package server

import (
	"math"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/docsift/docsift/llm"
	"github.com/labstack/echo/v4"
)

// Query bounds. top_k is capped because every returned chunk goes into the
// answer's prompt; a query is capped because it is a question, not a document.
const (
	defaultTopK   = 5
	maxTopK       = 50
	maxQueryRunes = 4000
)

type queryFields struct {
	Query *string  `json:"query"`
	TopK  *float64 `json:"top_k"`
}

type customerQueryRequest struct {
	CustomerID string `json:"customer_id"`
	queryFields
}

type projectQueryRequest struct {
	ProjectID string `json:"project_id"`
	queryFields
}

type queryChunk struct {
	ChunkID      string  `json:"chunk_id"`
	DocumentID   string  `json:"document_id"`
	DocumentName string  `json:"document_name"`
	Page         *int    `json:"page"`
	Text         string  `json:"text"`
	Score        float64 `json:"score"`
}

type queryResponse struct {
	Answer      string       `json:"answer"`
	AnswerModel string       `json:"answer_model"`
	Chunks      []queryChunk `json:"chunks"`
	Warnings    []string     `json:"warnings,omitempty"`
}

func (s *Server) queryCustomer(c echo.Context) error {
	var req customerQueryRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	cus, err := s.customerOf(c, req.CustomerID)
	if err != nil {
		return err
	}
	return s.query(c, cus.ID, req.queryFields)
}

func (s *Server) queryProject(c echo.Context) error {
	var req projectQueryRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	if err := checkProject(c, req.ProjectID); err != nil {
		return err
	}
	return s.query(c, req.ProjectID, req.queryFields)
}

// validate returns the query text and top_k, or a 400 naming the field.
func (q queryFields) validate() (string, int, error) {
	if q.Query == nil {
		return "", 0, badRequest("query is required")
	}
	text := strings.TrimSpace(*q.Query)
	if text == "" {
		return "", 0, badRequest("query is empty")
	}
	if n := utf8.RuneCountInString(text); n > maxQueryRunes {
		return "", 0, badRequest("query is %d characters, over the limit of %d", n, maxQueryRunes)
	}
	k := defaultTopK
	if q.TopK != nil {
		v := *q.TopK
		if v != math.Trunc(v) || v < 1 || v > maxTopK {
			return "", 0, badRequest("top_k must be a whole number from 1 to %d, got %v", maxTopK, v)
		}
		k = int(v)
	}
	return text, k, nil
}

func (s *Server) query(c echo.Context, owner string, q queryFields) error {
	text, k, err := q.validate()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	results, warnings, err := s.engine.Search(ctx, owner, text, k)
	if err != nil {
		return err
	}
	resp := queryResponse{Chunks: make([]queryChunk, len(results)), Warnings: warnings}
	sources := make([]llm.Source, len(results))
	for i, r := range results {
		var page *int
		if r.Chunk.Page > 0 {
			page = &r.Chunk.Page
		}
		resp.Chunks[i] = queryChunk{
			ChunkID: r.Chunk.ID, DocumentID: r.Chunk.DocumentID, DocumentName: r.DocumentName,
			Page: page, Text: r.Chunk.Text, Score: r.Score,
		}
		sources[i] = llm.Source{Title: r.DocumentName, Page: r.Chunk.Page, Text: r.Chunk.Text}
	}
	resp.Answer, resp.AnswerModel, resp.Warnings = s.answer(c, text, sources, resp.Warnings)
	return c.JSON(http.StatusOK, resp)
}

// answer asks the configured answerer and, when it fails, the extractive
// one, adding a warning that says why: a query never fails because the chat
// model is down.
func (s *Server) answer(c echo.Context, query string, sources []llm.Source, warnings []string) (string, string, []string) {
	ctx := c.Request().Context()
	a, err := s.answerer.Answer(ctx, query, sources, nil)
	if err == nil {
		return a, s.answerer.Model(), warnings
	}
	s.log.Warn("answer model failed; answering extractively", "request_id", requestID(c), "model", s.answerer.Model(), "err", err)
	a, _ = s.fallback.Answer(ctx, query, sources, nil)
	return a, s.fallback.Model(), append(warnings, "the answer model "+s.answerer.Model()+" failed ("+err.Error()+"); the answer is extractive")
}
