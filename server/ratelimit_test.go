package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestRateLimitPerProjectAndSession(t *testing.T) {
	// One request per 100 s: the second is refused however slow the machine.
	e := newEnv(t, withRateLimits(0.01, 0.01))
	if r := e.get(t, "/customers", e.a.key); r.status != http.StatusOK {
		t.Fatalf("first request: %s", r)
	}
	r := e.get(t, "/customers", e.a.key)
	wantError(t, r, http.StatusTooManyRequests, "rate limit", "per project")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 100 {
		t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	// Another project has its own budget.
	if r := e.get(t, "/customers", e.b.key); r.status != http.StatusOK {
		t.Fatalf("project B limited by A's traffic: %s", r)
	}
	// A bad key is refused before it can use anyone's budget.
	wantError(t, e.get(t, "/customers", "dsk_wrong"), http.StatusUnauthorized)

	// Sessions: the limit is per session URL.
	e2 := newEnv(t, withRateLimits(0, 0.01))
	url := func() string {
		r := e2.postJSON(t, "/session/single-tenant", e2.a.key, map[string]any{
			"project_id": e2.a.projectID, "services": []string{"all"},
			"success_url": "https://example.com/ok", "cancel_url": "https://example.com/no",
		})
		return decodeAs[struct {
			URL string `json:"url"`
		}](t, r).URL
	}
	s1, s2 := url(), url()
	if r := e2.fetch(t, s1); r.status != http.StatusOK {
		t.Fatalf("session page: %s", r)
	}
	if r := e2.fetch(t, s1+"/jobs"); r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "upload session") {
		t.Fatalf("second request of a session: %s", r)
	}
	// The page itself says so in HTML, not JSON.
	if r := e2.fetch(t, s1); r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "Wait a few seconds") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("limited page: %s", r)
	}
	if r := e2.fetch(t, s2); r.status != http.StatusOK {
		t.Fatalf("another session limited: %s", r)
	}
}
