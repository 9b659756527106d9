package store

import "time"

// Job and document statuses. A job moves PENDING → PROCESSING → SUCCEEDED or
// FAILED; a PROCESSING job found at start-up was interrupted and goes back to
// PENDING. A document carries its job's status.
const (
	StatusPending    = "PENDING"
	StatusProcessing = "PROCESSING"
	StatusSucceeded  = "SUCCEEDED"
	StatusFailed     = "FAILED"
)

// Document is one upload: a file or a text, owned by a project or customer.
type Document struct {
	ID        string            `json:"document_id"`
	ProjectID string            `json:"project_id"`
	OwnerID   string            `json:"owner_id"`
	Name      string            `json:"name"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Format    string            `json:"format"`
	FileHash  string            `json:"file_hash"`
	Size      int64             `json:"size"`
	Pages     int               `json:"pages,omitempty"`
	JobID     string            `json:"job_id"`
	Status    string            `json:"status"`
	Error     string            `json:"error,omitempty"`
	Chunks    int               `json:"chunks"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	// ExternalID is the caller's own id for the document, unique per
	// owner among the documents that hold it (see OtherHolder in rules.go).
	ExternalID string `json:"external_id,omitempty"`
	// Seq numbers documents in the order they were created: of two
	// uploads with one external id, the later one wins. 0 for documents
	// created before it was recorded, which are older than any other.
	Seq uint64 `json:"seq,omitempty"`
}

// Job is the durable record of the work of indexing one document.
type Job struct {
	ID         string `json:"job_id"`
	ProjectID  string `json:"project_id"`
	OwnerID    string `json:"owner_id"`
	DocumentID string `json:"document_id"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`
	Chunks     int    `json:"chunks"`
	// ChunksEmbedded is how many of Chunks have their vector: a running
	// job's chunks are searched by their words from the start, and by
	// meaning as their vectors come (see ReplaceChunks).
	ChunksEmbedded int `json:"chunks_embedded"`
	// SearchableAt is when the job's chunks were first written, and so
	// searchable by their words: before their vectors, for most jobs.
	SearchableAt time.Time `json:"searchable_at,omitzero"`
	Attempts     int       `json:"attempts"`
	// Interrupted counts the runs that the server (or, in a cluster, its
	// node) stopped while they were under way, which a crash or the OOM
	// killer does too: see RequeueInterrupted.
	Interrupted int       `json:"interrupted,omitempty"`
	NotBefore   time.Time `json:"next_attempt_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	QueueKey    []byte    `json:"queue_key,omitempty"` // its key in the queue while PENDING
	Ready       bool      `json:"ready,omitempty"`     // QueueKey is in the fair queue, not the waiting one (store/bolt/fairqueue.go)
	// StartedAt is when its latest run was claimed: what the run cost is
	// charged from (see chargeRun in store/bolt/fairqueue.go).
	StartedAt time.Time `json:"started_at,omitzero"`
	// Progress is how far the running attempt has read the document;
	// set only while PROCESSING (see SetJobProgress).
	Progress *JobProgress `json:"progress,omitempty"`
}
