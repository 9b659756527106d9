package store

import (
	"errors"
	"io"
	"net"
	"strings"
)

// Unavailable reports whether err means that the store could not be
// reached or is restarting, rather than that the request was wrong: a
// network store (PostgreSQL) that is down, failing over or shutting down.
// The server answers such errors with 503 and Retry-After, and the caller
// tries again; nothing is answered from a partial read.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	// PostgreSQL's SQLSTATE classes 08 (connection exception) and 57
	// (operator intervention: shutting down, starting up), and 53300 (too
	// many connections), read through the method its driver's errors
	// have, so that this package needs no driver.
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		code := coded.SQLState()
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57") || code == "53300"
	}
	return false
}
