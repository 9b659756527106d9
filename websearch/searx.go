// Package websearch finds pages on the web through a SearxNG instance the
// operator runs, so that docsift itself contacts only a server they chose.
package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docsift/docsift/internal/redact"
)

const (
	// DefaultSearxTimeout bounds one search when the caller's context has no
	// earlier deadline. SearxNG waits for its slowest engine (about 3 s by
	// default), so this leaves room without letting a stuck instance hang a
	// request.
	DefaultSearxTimeout = 15 * time.Second

	// maxSearxResponseBytes bounds what is read from the instance: a result
	// page is tens of kilobytes.
	maxSearxResponseBytes = 4 << 20

	// maxWebSnippetRunes bounds one snippet handed to an answerer.
	maxWebSnippetRunes = 600
)

// Result is one internet search hit.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

// ErrUnavailable marks a failure that may pass: the instance is down,
// overloaded or rate limiting. Trying again later may work.
var ErrUnavailable = errors.New("the search instance is unavailable")

// Failure is a search that failed. Reason says why in words for whoever
// asked, without the instance's address or Go's errors, which Error
// (for the operator's log) holds.
type Failure struct {
	Reason string
	err    error
}

func (f *Failure) Error() string { return f.err.Error() }
func (f *Failure) Unwrap() error { return f.err }

func fail(reason string, err error) error { return &Failure{Reason: reason, err: err} }

// Searx queries a SearxNG instance (or anything answering its JSON format):
// the self-hosted metasearch engine, so that docsift itself contacts only a
// server the operator chose.
type Searx struct {
	base   *url.URL
	shown  string // base without its password, for errors (which are logged)
	client *http.Client
}

// NewSearx returns a client for the instance at baseURL (the address its web
// page is served at, such as http://127.0.0.1:8888). A nil client means one
// with no overall timeout; each search has its own deadline.
func NewSearx(baseURL string, client *http.Client) (*Searx, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		// Not url.Parse's own words: they quote the URL, and parts of it
		// (a password read as a port) without it.
		return nil, fmt.Errorf("websearch: searxng url %q: not a URL such as http://127.0.0.1:8888", redact.URL(baseURL))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("websearch: searxng url %q: want an absolute http(s) URL", redact.URL(baseURL))
	}
	if client == nil {
		client = &http.Client{}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return &Searx{base: u, shown: redact.URL(u.String()), client: client}, nil
}

// searxResponse is the part of SearxNG's JSON answer docsift reads.
type searxResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

// Search returns up to n results for query, in the instance's order, without
// duplicate URLs or results lacking one.
func (s *Searx) Search(ctx context.Context, query string, n int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, errors.New("websearch: searxng: empty query")
	}
	if n <= 0 {
		return nil, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultSearxTimeout)
		defer cancel()
	}

	u := *s.base
	u.Path += "/search"
	u.RawQuery = url.Values{"q": {query}, "format": {"json"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("websearch: searxng: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "docsift")
	resp, err := s.client.Do(req)
	if err != nil {
		reason := "the search instance is not reachable"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = "the search instance did not answer in time"
		}
		return nil, fail(reason, fmt.Errorf("websearch: searxng: instance at %s did not answer (%v): %w", s.shown, err, ErrUnavailable))
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode == http.StatusForbidden:
		// SearxNG answers 403 when JSON is not among its enabled formats.
		return nil, fail("the search instance does not serve results as JSON (its operator must enable the json format)",
			fmt.Errorf("websearch: searxng: %s refused the JSON format (HTTP 403): add json to search.formats in its settings.yml", s.shown))
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, fail("the search instance is rate limiting: try again later",
			fmt.Errorf("websearch: searxng: %s is rate limiting (HTTP 429): try again later, or disable its limiter for docsift: %w", s.shown, ErrUnavailable))
	case resp.StatusCode >= 500:
		return nil, fail(fmt.Sprintf("the search instance failed (HTTP %d)", resp.StatusCode),
			fmt.Errorf("websearch: searxng: %s failed: HTTP %d: %w", s.shown, resp.StatusCode, ErrUnavailable))
	case resp.StatusCode != http.StatusOK:
		return nil, fail(fmt.Sprintf("the search instance answered HTTP %d", resp.StatusCode),
			fmt.Errorf("websearch: searxng: %s answered HTTP %d", s.shown, resp.StatusCode))
	}

	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxSearxResponseBytes+1))
	if err != nil {
		return nil, fail("the search instance's answer was cut off", fmt.Errorf("websearch: searxng: reading %s's answer: %w: %w", s.shown, err, ErrUnavailable))
	}
	if len(raw) > maxSearxResponseBytes {
		return nil, fail(fmt.Sprintf("the search instance sent more than %d MiB of results", maxSearxResponseBytes>>20),
			fmt.Errorf("websearch: searxng: %s sent more than %d bytes", s.shown, maxSearxResponseBytes))
	}
	var body searxResponse
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fail("the search instance sent something other than search results",
			fmt.Errorf("websearch: searxng: %s sent a response that is not SearxNG JSON: %w", s.shown, err))
	}
	seen := make(map[string]bool)
	var out []Result
	for _, r := range body.Results {
		link := strings.TrimSpace(r.URL)
		if link == "" || seen[link] {
			continue
		}
		seen[link] = true
		out = append(out, Result{
			Title:   oneLine(r.Title),
			URL:     link,
			Snippet: clipRunes(oneLine(r.Content), maxWebSnippetRunes),
		})
		if len(out) == n {
			break
		}
	}
	return out, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
