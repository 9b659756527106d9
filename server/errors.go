package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
)

// apiError is an error with the status and message the client sees. Every
// handler error that is not an apiError is a bug: it becomes a 500 with a
// generic message, and the details go to the log under the request id.
type apiError struct {
	status int
	msg    string
	// off marks a 503 for a feature this server was not set up for: the
	// operator's choice, not a failure to log on every call.
	off bool
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// featureOff is the 503 of a feature the operator has not set up.
func featureOff(msg string) error {
	return &apiError{status: http.StatusServiceUnavailable, msg: msg, off: true}
}

func badRequest(format string, args ...any) error {
	return errorf(http.StatusBadRequest, format, args...)
}

func notFound(format string, args ...any) error {
	return errorf(http.StatusNotFound, format, args...)
}

// isStatus reports whether err is an apiError with status.
func isStatus(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == status
}

// errorBody is the one shape every error response has.
type errorBody struct {
	Error string `json:"error"`
}

// statusClientClosed is nginx's "client closed request": the status the
// access log gives a request whose client went away before its answer.
const statusClientClosed = 499

// maxMessageBytes bounds an error's message: every message quotes the
// request's input clipped (internal/clip), and this catches any that does
// not, whatever the input, before it reaches the client.
const maxMessageBytes = 1 << 10

// handleError is echo's error handler: it writes every error, including
// echo's own (unknown route, wrong method), as {"error": ...}.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		// The client closed its connection (gave up on a busy server,
		// say): nothing failed here, and no one is left to read a body.
		c.Response().WriteHeader(statusClientClosed)
		return
	}
	status, msg := s.explain(c, err)
	if unreadBody(c) {
		// Refused before its body was read (an upload over a bound, a
		// wrong key): net/http would read the rest before answering, to
		// keep the connection, and a body still coming would hold the
		// answer back for as long as it takes. Answer now, and close.
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	// A HEAD request is answered as GET (routable): net/http leaves the
	// body out.
	if err := c.JSON(status, errorBody{Error: msg}); err != nil {
		s.log.Error("writing an error response failed", "request_id", requestID(c), "err", err)
	}
}

// explain says what a client is told of err: a status and a message in
// the API's words, the same for a JSON answer as for a stream's "error"
// event. An error it does not know is a bug: a 500 whose message names
// the request's id, the error itself (a Go error chain, with paths and
// addresses) going to the log only, as what the operator must hear of
// the others does.
func (s *Server) explain(c echo.Context, err error) (int, string) {
	status, msg := http.StatusInternalServerError, "internal error: the request was logged; please report it with its X-Request-ID, "+requestID(c)
	var ae *apiError
	var he *echo.HTTPError
	world := false // a failure of something the server relies on, not of the server
	switch {
	case errors.As(err, &ae):
		status, msg, world = ae.status, ae.msg, true
	case errors.Is(err, search.ErrAnswerBroken):
		// Only a stream has sent part of an answer: the client has it,
		// and should know it is incomplete.
		status, msg, world = http.StatusBadGateway, "the answer model failed mid-answer: the answer is incomplete; ask again", true
	case errors.Is(err, syscall.ENOSPC):
		// Not a bug, and nothing was changed: say so, so the caller
		// retries once the operator has made room. Even a delete writes
		// (the database copies the pages it changes).
		status, msg = http.StatusInsufficientStorage, "the server is out of disk space: nothing was changed; try again once its operator has made room"
	case errors.Is(err, fs.ErrPermission):
		// The data directory's owner is not the server's user: the
		// operator's to fix, and the same request works once they have.
		status, msg = http.StatusServiceUnavailable, "the server may not write its data directory (permission denied): its operator must fix the directory's owner"
	case store.Unavailable(err):
		// The database is down or failing over: nothing was answered from
		// it, and the same request will work again shortly.
		status, msg = http.StatusServiceUnavailable, "the database is unreachable right now; try again in a few seconds"
		c.Response().Header().Set("Retry-After", "5")
	case errors.As(err, &he):
		status = he.Code
		// A path may be as long as the headers may be (a megabyte), and a
		// method any word.
		method, path := clip.String(c.Request().Method), clip.String(c.Request().URL.Path)
		switch status {
		case http.StatusNotFound:
			msg = fmt.Sprintf("no route %s %s: see GET /openapi.json for the API", method, path)
		case http.StatusMethodNotAllowed:
			msg = fmt.Sprintf("method %s is not allowed on %s", method, path)
		case http.StatusRequestEntityTooLarge:
			msg = "the request body is too large"
		default:
			msg = fmt.Sprint(he.Message)
		}
	}
	attrs := []any{"request_id", requestID(c), "method", clip.String(c.Request().Method), "route", c.Path(), "status", status, "err", err}
	switch {
	case status < 500, ae != nil && ae.off:
		// The request's own log line says enough.
	case world:
		// A handler's answer about the world (a model server or Google
		// not answering, too many sign-ins at once): worth a warning.
		s.log.Warn("request refused", attrs...)
	default:
		// 507 included: the operator needs to hear about a full disk.
		s.log.Error("request failed", attrs...)
	}
	return status, clip.To(msg, maxMessageBytes)
}
