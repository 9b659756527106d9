package store

import "errors"

// Errors callers map to responses. Everything else is a bug or an I/O fault.
var (
	ErrNotFound = errors.New("not found")
	// ErrKeyRevoked is a session asked for with an API key revoked since
	// the request was let in.
	ErrKeyRevoked = errors.New("the API key was revoked")
)
