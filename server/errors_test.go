package server

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/labstack/echo/v4"
)

// Failures of the machine, not of the request, are said in words with a
// status the caller can act on, not as a 500 bug. Root, which the tests
// may run as, is never refused a file, so a denied write is made here.
func TestMachineFailuresInWords(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		err    error
		status int
		want   string
	}{
		{fmt.Errorf("store: write docsift.db: %w", syscall.ENOSPC), http.StatusInsufficientStorage, "out of disk space: nothing was changed"},
		{fmt.Errorf("store: write file: open files/prj_x/abc: %w", fs.ErrPermission), http.StatusServiceUnavailable, "may not write its data directory (permission denied)"},
	} {
		rec := httptest.NewRecorder()
		e := echo.New()
		s.handleError(c.err, e.NewContext(httptest.NewRequest(http.MethodDelete, "/documents/doc_x", nil), rec))
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != c.status || !strings.Contains(body.Error, c.want) {
			t.Errorf("%v: %d %s, want %d saying %q", c.err, rec.Code, rec.Body, c.status, c.want)
		}
	}
}

// An error explain does not know is a bug: a 500 naming the request's id,
// said the same way in a stream's "error" event as in a JSON answer, with
// the error itself in the log only.
func TestUnknownErrorsSayOnlyTheRequestID(t *testing.T) {
	var logs strings.Builder
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/query/project", nil), rec)
	c.Response().Header().Set(echo.HeaderXRequestID, "req-7")
	status, msg := s.explain(c, fmt.Errorf("index: read /srv/docsift/index/prj_x.snap: %w", syscall.EIO))
	if status != http.StatusInternalServerError || msg != "internal error: the request was logged; please report it with its X-Request-ID, req-7" {
		t.Errorf("explain = %d %q", status, msg)
	}
	if !strings.Contains(logs.String(), "request_id=req-7") || !strings.Contains(logs.String(), "/srv/docsift/index/prj_x.snap") {
		t.Errorf("the log does not hold the error:\n%s", logs.String())
	}
}
