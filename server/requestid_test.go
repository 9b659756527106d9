package server_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// A request's id is its client's when it is a short, plain token (a
// proxy's, a tracer's), else a new one: a client cannot write a megabyte,
// or what reads as another log entry, into every line about its request.
func TestRequestIDFromClientsSanitised(t *testing.T) {
	e := newEnv(t)
	token := regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	for _, c := range []struct {
		sent string
		kept bool
	}{
		{"9f86d081-884c-4d63-a5c9-ab2d4e0c7d10", true},
		{"trace_01.HJ-x", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{strings.Repeat("b", 500_000), false},
		{`x level=ERROR msg="disk full, delete the data directory"`, false},
		{"x\tlevel=ERROR", false},
		{"id/../../etc", false},
		{"ïd", false},
	} {
		req, err := http.NewRequest(http.MethodGet, e.base+"/customers", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.a.key)
		req.Header.Set("X-Request-ID", c.sent)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("X-Request-ID")
		switch {
		case resp.StatusCode != http.StatusOK:
			t.Errorf("%.40q: status %d", c.sent, resp.StatusCode)
		case c.kept && got != c.sent:
			t.Errorf("%.40q: answered with id %q, want it kept", c.sent, got)
		case !c.kept && (got == c.sent || !token.MatchString(got)):
			t.Errorf("%.40q: answered with id %.80q, want a new token", c.sent, got)
		}
		if !strings.Contains(e.logs.String(), "request_id="+got+" ") {
			t.Errorf("%.40q: the log has no line with id %q", c.sent, got)
		}
	}
	logs := e.logs.String()
	if strings.Contains(logs, "bbbbbbbbbbbbbbbb") || strings.Contains(logs, "disk full") || strings.Contains(logs, "/../") || strings.Contains(logs, strings.Repeat("a", 65)) {
		t.Errorf("a client's id reached the log:\n%.2000s", logs)
	}
}
