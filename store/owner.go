package store

import "errors"

// OwnerModel records which embedder made an owner's vectors. Vectors of two
// models live in different spaces, so an owner's vectors all come from one
// model; a reindex stages the next model's vectors (Next) and switches over
// in one transaction.
type OwnerModel struct {
	Model string `json:"model"`
	Dim   int    `json:"dim"`
	Next  string `json:"next_model,omitempty"`
}

// ErrModelMismatch is returned when vectors of another model than the
// owner's are written.
var ErrModelMismatch = errors.New("embedding model mismatch")
