package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
)

// The errors below are what callers of Embedder and Answerer test for,
// whichever model server is behind them: whether a failure is worth
// retrying (IsTransient), how to tell a tenant or an operator about it
// (Describe, DescribeAt), and the failures no retry mends. A model
// server's client (llm/ollama) returns them, and marks its own errors with
// Transient, Permanent and ServerError so that these functions need not
// know its protocol.

// ModelNotFoundError says a model is not pulled on the Ollama server.
type ModelNotFoundError struct {
	Model string
	URL   string
}

func (e *ModelNotFoundError) Error() string {
	return fmt.Sprintf("model %s is not pulled on the Ollama server at %s: run `docsift models pull` (or `ollama pull %s`)", e.Model, e.URL, e.Model)
}

// DimensionError says the server returned vectors of a different dimension
// than the embedder was using: the model behind the name changed, and its
// vectors must not be mixed with the old ones.
type DimensionError struct {
	Model     string
	Want, Got int
}

func (e *DimensionError) Error() string {
	return fmt.Sprintf("model %s returned %d-dimension vectors, want %d (was the model replaced? run `docsift reindex`)", e.Model, e.Got, e.Want)
}

// ModelConfigError is a configured model that cannot serve its purpose: a
// chat model that cannot chat, an embedding model that cannot embed, or
// servers that hold different models under the name. Waiting does not fix
// it, so it stops the start-up whatever the mode.
type ModelConfigError struct{ Msg string }

func (e *ModelConfigError) Error() string { return "llm: " + e.Msg }

// ModelReplacedError says the model behind a name is not the one it was:
// its vectors must not be mixed with the old ones. Old and New are the
// digests, shortened for the message.
type ModelReplacedError struct {
	Model, Old, New string
}

func (e *ModelReplacedError) Error() string {
	return fmt.Sprintf("model %s was replaced on the Ollama server (digest %s, now %s): its vectors do not match the ones indexed; restart docsift and run `docsift reindex`", e.Model, ShortDigest(e.Old), ShortDigest(e.New))
}

// ShortDigest is a model digest as `ollama list` shows it.
func ShortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// TruncatedAnswerError comes with an answer the model stopped at its
// length limit (done_reason "length"): the answer is usable but
// incomplete, a warning for the reader rather than a failure.
type TruncatedAnswerError struct {
	Model  string
	Tokens int // the limit it reached
}

func (e *TruncatedAnswerError) Error() string {
	return fmt.Sprintf("the answer of %s was truncated at its limit of %d tokens and may be incomplete", e.Model, e.Tokens)
}

// ServerError is a failure to reach a model server: Error gives it in the
// client's voice (Op names the client and the call, "ollama embed"),
// with the transport's own words, for the log; Plain in a user's, for
// what a client or a job's record shows, and At in the operator's tools'
// (it names the server).
type ServerError struct {
	Op, Plain, At string
	Err           error
}

func (e *ServerError) Error() string {
	return "llm: " + e.Op + ": " + e.At + ": " + e.Err.Error()
}
func (e *ServerError) Unwrap() error { return e.Err }

// transientError marks an error as worth retrying.
type transientError struct{ error }

func (e transientError) Unwrap() error { return e.error }

// permanentError marks an error as not worth retrying, whatever it wraps.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// Transient marks err as worth retrying (see IsTransient): a server's
// overload or internal failure, a stream that ended early.
func Transient(err error) error { return transientError{err} }

// Permanent marks err as not worth retrying, whatever it wraps (Ollama
// reports some permanent failures as a 500).
func Permanent(err error) error { return permanentError{err} }

// IsTransient reports whether err is worth retrying later, with backoff:
// the server could not be reached, took too long, or its client marked
// the error Transient (a 5xx, an overload, a stream that ended early). A missing
// model, a wrong dimension, a rejected request and a caller's
// cancellation are permanent: retrying cannot fix them.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var mnf *ModelNotFoundError
	var dim *DimensionError
	var pe permanentError
	var mce *ModelConfigError
	var mre *ModelReplacedError
	if errors.As(err, &mnf) || errors.As(err, &dim) || errors.As(err, &pe) || errors.As(err, &mce) || errors.As(err, &mre) {
		return false
	}
	var te transientError
	if errors.As(err, &te) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true // refused, reset, timed out, name not resolved (yet)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	// A connection closed mid-response surfaces as a bare (unexpected) EOF.
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Describe is err in words for whoever sent the request or the upload: a
// failure to reach the model server without the Go transport's text
// ("Post ...: dial tcp ...: connect: connection refused"), whatever
// context was put before it, and without the model server's address: a
// tenant is not told where the operator's servers are.
func Describe(err error) string {
	return modelServerURL.ReplaceAllString(describe(err, false), "the model server")
}

// DescribeAt is Describe for the operator's own tools (`docsift models`,
// reindex): it names the server.
func DescribeAt(err error) string { return describe(err, true) }

// modelServerURL finds what Describe leaves out: URLs, which in a model
// server's errors are the server's (net/http names the URL it failed on).
var modelServerURL = regexp.MustCompile(`(?i)\bhttps?://[^\s"']+`)

func describe(err error, at bool) string {
	msg := err.Error()
	var se *ServerError
	var mnf *ModelNotFoundError
	switch {
	case errors.As(err, &se):
		plain := se.Plain
		if at {
			plain = se.At
		}
		if i := strings.Index(msg, "llm: "+se.Op+": "); i >= 0 {
			return msg[:i] + plain
		}
		return plain
	case errors.As(err, &mnf) && !at:
		return strings.Replace(msg, " at "+mnf.URL, "", 1)
	}
	return msg
}
