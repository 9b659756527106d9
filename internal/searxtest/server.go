// Package searxtest runs a stand-in for a SearxNG instance in tests: GET
// /search?q=…&format=json answers in SearxNG's JSON shape, with results the
// test chooses (or a deterministic few made from the query), and faults on
// demand. Nothing on the internet is contacted.
package searxtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// Result is one search hit as SearxNG reports it.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Content string `json:"content"`
	Engine  string `json:"engine,omitempty"`
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	URL string

	mu       sync.Mutex
	results  []Result // nil: made from the query
	status   int      // non-zero: answer every search with this status
	noJSON   bool
	queries  []string
	rawReply string
}

// New starts a stand-in that stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	ts := httptest.NewServer(s)
	s.URL = ts.URL
	t.Cleanup(ts.Close)
	return s
}

// SetResults fixes the results of every search.
func (s *Server) SetResults(rs []Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = rs
}

// SetStatus makes every search fail with status (0 to recover).
func (s *Server) SetStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// DisableJSON answers format=json with 403, as SearxNG does when JSON is not
// among the formats enabled in its settings.yml (the default).
func (s *Server) DisableJSON() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noJSON = true
}

// SetRawReply makes every search answer 200 with body as is.
func (s *Server) SetRawReply(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rawReply = body
}

// Queries returns the q parameter of every search received.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// Made returns the results the stand-in makes for q when none are set:
// three hits whose snippets repeat the query.
func Made(q string) []Result {
	var rs []Result
	for i := 1; i <= 3; i++ {
		rs = append(rs, Result{
			Title:   fmt.Sprintf("Result %d for %s", i, q),
			URL:     fmt.Sprintf("https://example.org/%d?q=%s", i, url.QueryEscape(q)),
			Content: fmt.Sprintf("Page %d explains %s in detail.", i, q),
			Engine:  "stand-in",
		})
	}
	return rs
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/search" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query().Get("q")
	s.mu.Lock()
	s.queries = append(s.queries, q)
	results, status, noJSON, raw := s.results, s.status, s.noJSON, s.rawReply
	s.mu.Unlock()

	switch {
	case status != 0:
		http.Error(w, http.StatusText(status), status)
		return
	case r.URL.Query().Get("format") != "json":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><title>searx stand-in</title>")
		return
	case noJSON:
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	case raw != "":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, raw)
		return
	}
	if results == nil {
		results = Made(q)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"query":                q,
		"number_of_results":    len(results),
		"results":              results,
		"answers":              []any{},
		"corrections":          []any{},
		"infoboxes":            []any{},
		"suggestions":          []any{},
		"unresponsive_engines": []any{},
	})
}
