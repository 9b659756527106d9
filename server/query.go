package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/docsift/docsift/search"
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
	Query  *string  `json:"query"`
	TopK   *float64 `json:"top_k"`
	Stream bool     `json:"stream"`
	// Filter restricts the query to some documents; its grammar is
	// search.ParseFilter's.
	Filter json.RawMessage `json:"filter"`
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
	if err := checkProject(c, "project_id", req.ProjectID); err != nil {
		return err
	}
	return s.query(c, req.ProjectID, req.queryFields)
}

// validate returns the query text, top_k and filter, or a 400 naming the
// field (and, for the filter, the part of it that is wrong).
func (q queryFields) validate() (string, int, *search.Filter, error) {
	text, k, err := checkQuery(q.Query, q.TopK, defaultTopK, maxTopK)
	if err != nil {
		return "", 0, nil, err
	}
	filter, err := search.ParseFilter(q.Filter)
	if err != nil {
		return "", 0, nil, badRequest("%v", err)
	}
	return text, k, filter, nil
}

func (s *Server) query(c echo.Context, owner string, q queryFields) error {
	text, k, filter, err := q.validate()
	if err != nil {
		return err
	}
	if s.forward(c, owner) {
		return nil
	}
	s.servedHere(c)
	ctx := c.Request().Context()
	if q.Stream {
		return s.streamQuery(c, owner, text, k, filter)
	}
	resp, err := s.search.Query(ctx, owner, text, k, filter, nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, queryResponse{
		Answer: resp.Text, AnswerModel: resp.Model,
		Chunks: queryChunks(resp.Chunks), Warnings: resp.Warnings,
	})
}

func queryChunks(results []search.Result) []queryChunk {
	out := make([]queryChunk, len(results))
	for i, r := range results {
		var page *int
		if r.Chunk.Page > 0 {
			page = &r.Chunk.Page
		}
		out[i] = queryChunk{
			ChunkID: r.Chunk.ID, DocumentID: r.Chunk.DocumentID, DocumentName: r.DocumentName,
			Page: page, Text: r.Chunk.Text, Score: r.Score,
		}
	}
	return out
}

// streamQuery answers as server-sent events: one "chunks" event with the
// retrieved chunks, "answer" events carrying pieces of the answer as the
// model writes them, then "done" with the whole answer, or "error" if the
// model fails midway, in the words a JSON error would have. A client that disconnects ends the model call
// through the request's context (an Ollama model's answer is still read to
// its end, in the background). A search that fails before the chunks are
// sent is an ordinary JSON error.
func (s *Server) streamQuery(c echo.Context, owner, query string, k int, filter *search.Filter) error {
	w := c.Response()
	send := func(event string, v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		w.Flush()
	}
	var chunks []queryChunk
	resp, err := s.search.Query(c.Request().Context(), owner, query, k, filter, &search.Stream{
		Chunks: func(results []search.Result, warnings []string) {
			w.Header().Set(echo.HeaderContentType, "text/event-stream")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("X-Accel-Buffering", "no") // no proxy buffering
			w.WriteHeader(http.StatusOK)
			chunks = queryChunks(results)
			send("chunks", struct {
				Chunks   []queryChunk `json:"chunks"`
				Warnings []string     `json:"warnings,omitempty"`
			}{chunks, warnings})
		},
		Delta: func(d string) { send("answer", map[string]string{"delta": d}) },
	})
	switch {
	case !w.Committed:
		return err
	case err != nil:
		if c.Request().Context().Err() == nil {
			_, msg := s.explain(c, err) // logs it, as handleError would
			send("error", errorBody{Error: msg})
		}
		return nil
	}
	send("done", queryResponse{Answer: resp.Text, AnswerModel: resp.Model, Chunks: chunks, Warnings: resp.Warnings})
	return nil
}
