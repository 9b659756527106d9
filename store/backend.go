package store

import "time"

// The store's seam is split by what its callers need: each interface below
// is one kind of record and the operations on it, so that a caller names
// the few it uses (the webhook sender a DeliveryQueue, search a
// ChunkStore's reads) and a test stands in for those alone.
//
// Backend, all of them together, is what the one place that wires a
// server needs. store/bolt (bbolt, one process on one data dir) and
// store/postgres (PostgreSQL, shared by the nodes of a cluster) implement
// it, store/storetest holds both to the same behaviour, and the rules
// they share are written once in this package (rules.go).
//
// Operations that only make sense for a bbolt file (Backup, SetThrowaway,
// SweepFiles, Fingerprint, Inspect) are not on it: callers that use them
// take the bbolt store itself.
type Backend interface {
	ProjectStore
	CustomerStore
	SessionStore
	QuotaStore
	DocumentStore
	JobStore
	ChunkStore
	ModelStore
	SubpageStore
	WebhookStore
	DeliveryQueue

	// Now is the clock expiry times are compared against.
	Now() time.Time
	Close() error
}

// ProjectStore keeps projects and their API keys.
type ProjectStore interface {
	CreateProject(name string) (*Project, string, error)
	Project(id string) (*Project, error)
	Projects() ([]Project, error)
	CreateKey(projectID string) (string, *APIKey, error)
	Keys(projectID string) ([]APIKey, error)
	RevokeKey(keyID string) (*APIKey, error)
	Authenticate(secret string) (*Project, string, error)
}

// CustomerStore keeps a project's customers.
type CustomerStore interface {
	CreateCustomer(projectID, name string, limits ProjectLimits) (*Customer, error)
	Customer(id string) (*Customer, error)
	Customers(projectID, find, after string, limit int) ([]Customer, string, error)
}

// SessionStore keeps upload sessions.
type SessionStore interface {
	CreateSession(sess Session, ttl time.Duration, limits ProjectLimits) (*Session, string, error)
	SessionByToken(token string) (*Session, error)
	CloseSession(token, how string) (*Session, error)
	SweepSessions() (int, error)
}

// QuotaStore reads what a project keeps against its quotas
// (ProjectLimits), which the creates of the other stores check in their
// transactions; CheckQuotas is a cheap check of the same to ask before an
// upload's body is read.
type QuotaStore interface {
	ProjectUsage(projectID string) (ProjectUsage, error)
	CheckQuotas(projectID string, limits ProjectLimits, more ProjectUsage) error
}

// DocumentStore keeps documents, their original files and their external
// ids (one holder each, see OtherHolder).
type DocumentStore interface {
	CreateDocument(d *Document, o *Original, limits ProjectLimits) (*Job, error)
	Document(id string) (*Document, error)
	Documents(ownerID, after string, limit int) ([]Document, string, error)
	SessionDocuments(ownerID, sessionID string) ([]Document, error)
	DeleteDocument(id string) ([]uint64, error)
	DocumentsOf(chunks []Chunk) (map[string]*Document, error)
	DocumentNames(chunks []Chunk) (map[string]string, error)
	ReadOriginal(d *Document) ([]byte, error)
	OpenOriginal(d *Document) (*Original, error)
	DocumentByExternalID(ownerID, externalID string) (*Document, error)
}

// JobStore is the indexing queue.
type JobStore interface {
	Job(id string) (*Job, error)
	ClaimJob(skip []string) (*Job, *Document, error)
	NextDue() (time.Time, bool)
	FinishJob(jobID string, chunks, pages int, errMsg string) error
	SetJobProgress(jobID string, p JobProgress) error
	RetryJob(jobID string, notBefore time.Time, errMsg string) error
	RequeueInterrupted(maxInterrupted int) (int, []*Job, error)
	PendingJobs() (n int, oldest time.Time, err error)
}

// ChunkStore keeps chunks and their vectors, by sequence number, and the
// embedding cache.
type ChunkStore interface {
	ReplaceChunks(documentID, model string, chunks []Chunk, vectors [][]float32) ([]uint64, error)
	AddVectors(documentID, model string, seqs []uint64, vectors [][]float32) (newSeqs, removed []uint64, complete bool, err error)
	DeleteChunks(documentID string) ([]uint64, error)
	Chunk(id string) (*Chunk, error)
	ChunksBySeq(seqs []uint64) ([]Chunk, error)
	OwnerSeqs(ownerID string) ([]uint64, error)
	Vector(model string, seq uint64) ([]float32, error)
	Vectors(model string, seqs []uint64) ([][]float32, error)
	CachedVectors(owner, model string, hashes []string) ([][]float32, error)
}

// ModelStore keeps owners' embedding models and reindexing onto another
// one.
type ModelStore interface {
	OwnerModel(owner string) (*OwnerModel, error)
	ClaimOwnerModel(owner, model string, dim int) error
	Owners() (map[string]OwnerModel, error)
	BeginReindex(owner, next string) error
	PutVectors(model string, seqs []uint64, vectors [][]float32) error
	MissingVectors(owner, model string) ([]uint64, error)
	FinishReindex(owner, model string, dim int) error
}

// SubpageStore keeps subpages: PDF slices of a document's pages served at
// capability URLs, one a run of pages, within limits on what is kept.
type SubpageStore interface {
	SubpageFor(documentID string, first, last int) (*Subpage, error)
	SubpageUsage(projectID, ownerID string) (SubpageUsage, error)
	CreateSubpage(sp Subpage, data []byte, ttl time.Duration, limits SubpageLimits) (*Subpage, error)
	ExtendSubpage(id string, ttl time.Duration) (*Subpage, error)
	Subpage(id string) (*Subpage, error)
	OpenSubpage(id string) (SubpageFile, error)
	SweepSubpages() (int, error)
}

// WebhookStore keeps a project's webhooks and the record of their
// deliveries.
type WebhookStore interface {
	CreateWebhook(projectID, url string, events []string) (*Webhook, error)
	Webhook(id string) (*Webhook, error)
	Webhooks(projectID string) ([]Webhook, error)
	DeleteWebhook(id string) error
	Deliveries(webhookID string, limit int) ([]Delivery, error)
}

// DeliveryQueue is the outbox of webhook deliveries a sender works
// through; a job's end queues its event's deliveries (EventDeliveries) in
// the same transaction.
type DeliveryQueue interface {
	ClaimDelivery(lease time.Duration, busyWebhooks, busyProjects []string) (*Delivery, *Webhook, error)
	ReleaseDeliveries() (int, error)
	NextDeliveryDue() (time.Time, bool)
	DeliveryAttempted(id string, status int, errMsg string, retryAt time.Time) error
}
