package store

import (
	"errors"
	"time"
)

// ErrNoJob is returned by ClaimJob when no job is due.
var ErrNoJob = errors.New("no job is due")

// JobProgress is how far a running job has read its document: pages done
// of pages, as extraction reports them.
type JobProgress struct {
	PagesDone int `json:"pages_done"`
	Pages     int `json:"pages"`
}

// DefaultMaxInterrupted is how many interrupted runs fail a job: the first
// may be a crash that had nothing to do with the document (a power cut,
// another job's), the second, after the job ran again, is the document's.
const DefaultMaxInterrupted = 2

// InterruptedError is the error of a job failed by RequeueInterrupted.
const InterruptedError = "this document stopped the server while it was being processed, %d times; it will not be processed again: check that it opens, or split it into smaller files"

// CostUnit is how long a job may run for its one turn: each further
// CostUnit it ran moves its project's and owner's tags one more step.
const CostUnit = time.Second
