package websearch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/searxtest"
)

func TestSearxSearch(t *testing.T) {
	srv := searxtest.New(t)
	srv.SetResults([]searxtest.Result{
		{Title: " Go  1.26\nrelease ", URL: "https://go.dev/doc/go1.26", Content: "Go 1.26 adds\n new things."},
		{Title: "dup", URL: "https://go.dev/doc/go1.26", Content: "same page from another engine"},
		{Title: "no url", URL: "", Content: "dropped"},
		{Title: "Blog", URL: "https://go.dev/blog", Content: "The Go blog."},
		{Title: "Third", URL: "https://example.org/3", Content: "third"},
	})
	s, err := NewSearx(srv.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Search(context.Background(), "go 1.26 & more?", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Title: "Go 1.26 release", URL: "https://go.dev/doc/go1.26", Snippet: "Go 1.26 adds new things."},
		{Title: "Blog", URL: "https://go.dev/blog", Snippet: "The Go blog."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results = %+v\nwant %+v", got, want)
	}
	if q := srv.Queries(); len(q) != 1 || q[0] != "go 1.26 & more?" {
		t.Errorf("instance received queries %q", q)
	}

}

func TestSearxUnderAPath(t *testing.T) {
	srv := searxtest.New(t)
	mux := http.NewServeMux()
	mux.Handle("/searx/", http.StripPrefix("/searx", srv))
	// Reuse the stand-in behind a path prefix, as a reverse proxy would.
	front := newTestServer(t, mux)
	s, err := NewSearx(front+"/searx", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Search(context.Background(), "bbolt", 5)
	if err != nil || len(got) != 3 || !strings.Contains(got[0].Snippet, "bbolt") {
		t.Errorf("Search under a path = %+v, %v", got, err)
	}
}

func TestSearxErrors(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(*searxtest.Server)
		errHas    string
		transient bool
		reason    string // what a caller of the API is told
	}{
		{"json disabled", func(s *searxtest.Server) { s.DisableJSON() }, "settings.yml", false, "the search instance does not serve results as JSON (its operator must enable the json format)"},
		{"server error", func(s *searxtest.Server) { s.SetStatus(http.StatusBadGateway) }, "502", true, "the search instance failed (HTTP 502)"},
		{"rate limited", func(s *searxtest.Server) { s.SetStatus(http.StatusTooManyRequests) }, "429", true, "the search instance is rate limiting: try again later"},
		{"not searxng", func(s *searxtest.Server) { s.SetRawReply("<html>") }, "not SearxNG JSON", false, "the search instance sent something other than search results"},
		{"results of the wrong kind", func(s *searxtest.Server) { s.SetRawReply(`{"results": "none"}`) }, "not SearxNG JSON", false, "the search instance sent something other than search results"},
		{"too large", func(s *searxtest.Server) {
			s.SetRawReply(`{"results": [` + strings.Repeat(`{"title": "t", "url": "https://example.org/", "content": "`+strings.Repeat("x", 1000)+`"},`, 5000) + `{}]}`)
		}, "more than", false, "the search instance sent more than 4 MiB of results"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := searxtest.New(t)
			tt.setup(srv)
			s, err := NewSearx(srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Search(context.Background(), "q", 3)
			if err == nil || !strings.HasPrefix(err.Error(), "websearch: searxng: ") || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.errHas)
			}
			if errors.Is(err, ErrUnavailable) != tt.transient {
				t.Errorf("errors.Is(%v, ErrUnavailable) = %v", err, !tt.transient)
			}
			var f *Failure
			if !errors.As(err, &f) || f.Reason != tt.reason {
				t.Errorf("reason %+v, want %q", f, tt.reason)
			}
		})
	}

	s, _ := NewSearx("http://127.0.0.1:1", nil)
	if _, err := s.Search(context.Background(), "  ", 3); err == nil {
		t.Error("empty query: want an error")
	}
	var f *Failure
	if _, err := s.Search(context.Background(), "q", 3); !errors.Is(err, ErrUnavailable) || !errors.As(err, &f) || f.Reason != "the search instance is not reachable" {
		t.Errorf("unreachable instance: %v, want a transient error saying so", err)
	}
	// An instance that never answers: the search's deadline ends it.
	stuck := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	s, _ = NewSearx(stuck, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Search(ctx, "q", 3); !errors.As(err, &f) || f.Reason != "the search instance did not answer in time" {
		t.Errorf("an instance that never answers: %v", err)
	}
	for _, bad := range []string{"", "searx.local", "file:///etc", "http://"} {
		if _, err := NewSearx(bad, nil); err == nil {
			t.Errorf("NewSearx(%q): want an error", bad)
		}
	}
}

func newTestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// The instance's password (a SearxNG behind basic auth) is sent, and never
// written in an error, which the server logs.
func TestSearxErrorsHoldNoPassword(t *testing.T) {
	const secret = "s3archS3cret"
	srv := searxtest.New(t)
	srv.SetStatus(http.StatusBadGateway)
	withPassword := strings.Replace(srv.URL, "http://", "http://docsift:"+secret+"@", 1)
	s, err := NewSearx(withPassword, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Search(context.Background(), "q", 3)
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "docsift:xxxxx@") {
		t.Errorf("a failed search: %v", err)
	}
	for _, bad := range []string{"http://docsift:pa/" + secret + "@127.0.0.1:8888", "ftp://docsift:" + secret + "@127.0.0.1"} {
		if _, err := NewSearx(bad, nil); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("NewSearx(%q): %v", bad, err)
		}
	}
}
