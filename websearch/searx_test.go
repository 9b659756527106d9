package websearch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

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
	}{
		{"json disabled", func(s *searxtest.Server) { s.DisableJSON() }, "settings.yml", false},
		{"server error", func(s *searxtest.Server) { s.SetStatus(http.StatusBadGateway) }, "502", true},
		{"rate limited", func(s *searxtest.Server) { s.SetStatus(http.StatusTooManyRequests) }, "429", true},
		{"not searxng", func(s *searxtest.Server) { s.SetRawReply("<html>") }, "not SearxNG JSON", false},
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
		})
	}

	s, _ := NewSearx("http://127.0.0.1:1", nil)
	if _, err := s.Search(context.Background(), "  ", 3); err == nil {
		t.Error("empty query: want an error")
	}
	if _, err := s.Search(context.Background(), "q", 3); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unreachable instance: %v, want a transient error", err)
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
