package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"
)

// apiError is an error with the status and message the client sees. Every
// handler error that is not an apiError is a bug: it becomes a 500 with a
// generic message, and the details go to the log under the request id.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
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

// handleError is echo's error handler: it writes every error, including
// echo's own (unknown route, wrong method), as {"error": ...}.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := http.StatusInternalServerError, "internal error: the request was logged; please report it with its X-Request-ID"
	var ae *apiError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
		status, msg = ae.status, ae.msg
	case errors.Is(err, syscall.ENOSPC):
		// Not a bug, and nothing was stored: say so, so the caller retries
		// once the operator has made room.
		status, msg = http.StatusInsufficientStorage, "the server is out of disk space: nothing was stored; try again later"
	case errors.As(err, &he):
		status = he.Code
		switch status {
		case http.StatusNotFound:
			msg = fmt.Sprintf("no route %s %s: see GET /openapi.json for the API", c.Request().Method, c.Request().URL.Path)
		case http.StatusMethodNotAllowed:
			msg = fmt.Sprintf("method %s is not allowed on %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusRequestEntityTooLarge:
			msg = "the request body is too large"
		default:
			msg = fmt.Sprint(he.Message)
		}
	}
	if status >= 500 {
		// 507 included: the operator needs to hear about a full disk.
		s.log.Error("request failed", "request_id", requestID(c), "method", c.Request().Method, "route", c.Path(), "err", err)
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else {
		err = c.JSON(status, errorBody{Error: msg})
	}
	if err != nil {
		s.log.Error("writing an error response failed", "request_id", requestID(c), "err", err)
	}
}

// decodeJSON reads a JSON object from the request body into v, limited to
// limit bytes, and turns every way it can go wrong into a 400 or 413 that
// names the problem. Unknown fields are refused: a misspelt optional field
// would otherwise be silently ignored.
func decodeJSON(c echo.Context, limit int64, v any) error {
	// The Content-Type is not checked: `curl -d` sends JSON labelled as a
	// form, and refusing it helps nobody. The body must parse, though.
	body := http.MaxBytesReader(c.Response(), c.Request().Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return badRequest("the request body must hold exactly one JSON object")
		}
		return nil
	}
	var maxErr *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &maxErr):
		return errorf(http.StatusRequestEntityTooLarge, "the request body is over the limit of %s", humanBytes(limit))
	case errors.Is(err, io.EOF):
		return badRequest("the request body is empty: send a JSON object")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the request body is not valid JSON (%v): send a JSON object", err)
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return badRequest("the request body must be a JSON object")
		}
		return badRequest("field %s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("unknown field %s in the request body", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return badRequest("the request body could not be read: %v", err)
	}
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "float64", "float32", "int", "int64":
		return "a number"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return kind
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
