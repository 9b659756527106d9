package store

import "time"

// Backend is the store a running server works with: every method the
// server, ingest, search, webhook and admin-socket packages call while
// serving. *Store (bbolt, one process on one data dir) implements it, and
// so does pgstore.Store (PostgreSQL, shared by the nodes of a cluster);
// store/storetest holds both to the same behaviour.
//
// Operations that only make sense for a bbolt file (Backup, SetThrowaway,
// SweepFiles, Fingerprint, Inspect) are not on it: callers that use them
// take *Store or ask for them with a type assertion.
type Backend interface {
	// Projects, API keys, customers and upload sessions.
	CreateProject(name string) (*Project, string, error)
	Project(id string) (*Project, error)
	Projects() ([]Project, error)
	CreateKey(projectID string) (string, *APIKey, error)
	Keys(projectID string) ([]APIKey, error)
	RevokeKey(keyID string) (*APIKey, error)
	Authenticate(secret string) (*Project, string, error)
	CreateCustomer(projectID, name string, limits ProjectLimits) (*Customer, error)
	Customer(id string) (*Customer, error)
	Customers(projectID, find, after string, limit int) ([]Customer, string, error)
	CreateSession(sess Session, ttl time.Duration, limits ProjectLimits) (*Session, string, error)
	SessionByToken(token string) (*Session, error)
	CloseSession(token, how string) (*Session, error)
	SweepSessions() (int, error)

	// What a project keeps against its quotas (ProjectLimits), which the
	// creates above and CreateDocument check in their transactions, and
	// a cheap check of the same to ask before an upload's body is read.
	ProjectUsage(projectID string) (ProjectUsage, error)
	CheckQuotas(projectID string, limits ProjectLimits, more ProjectUsage) error

	// Documents and their original files.
	CreateDocument(d *Document, o *Original, limits ProjectLimits) (*Job, error)
	Document(id string) (*Document, error)
	Documents(ownerID, after string, limit int) ([]Document, string, error)
	SessionDocuments(ownerID, sessionID string) ([]Document, error)
	DeleteDocument(id string) ([]uint64, error)
	DocumentsOf(chunks []Chunk) (map[string]*Document, error)
	DocumentNames(chunks []Chunk) (map[string]string, error)
	ReadOriginal(d *Document) ([]byte, error)
	OpenOriginal(d *Document) (*Original, error)

	// Jobs: the indexing queue.
	Job(id string) (*Job, error)
	ClaimJob(skip []string) (*Job, *Document, error)
	NextDue() (time.Time, bool)
	FinishJob(jobID string, chunks, pages int, errMsg string) error
	SetJobProgress(jobID string, p JobProgress) error
	RetryJob(jobID string, notBefore time.Time, errMsg string) error
	RequeueInterrupted(maxInterrupted int) (int, []*Job, error)
	PendingJobs() (n int, oldest time.Time, err error)

	// Chunks and their vectors, by sequence number.
	ReplaceChunks(documentID, model string, chunks []Chunk, vectors [][]float32) ([]uint64, error)
	AddVectors(documentID, model string, seqs []uint64, vectors [][]float32) (newSeqs, removed []uint64, complete bool, err error)
	DeleteChunks(documentID string) ([]uint64, error)
	Chunk(id string) (*Chunk, error)
	ChunksBySeq(seqs []uint64) ([]Chunk, error)
	OwnerSeqs(ownerID string) ([]uint64, error)
	Vector(model string, seq uint64) ([]float32, error)
	Vectors(model string, seqs []uint64) ([][]float32, error)

	// Owners' embedding models and reindexing onto another one.
	OwnerModel(owner string) (*OwnerModel, error)
	ClaimOwnerModel(owner, model string, dim int) error
	Owners() (map[string]OwnerModel, error)
	BeginReindex(owner, next string) error
	PutVectors(model string, seqs []uint64, vectors [][]float32) error
	MissingVectors(owner, model string) ([]uint64, error)
	FinishReindex(owner, model string, dim int) error

	// Embedding cache.
	CachedVectors(owner, model string, hashes []string) ([][]float32, error)

	// External ids: a caller's own id of a document, one holder per owner.
	DocumentByExternalID(ownerID, externalID string) (*Document, error)

	// Subpages: PDF slices of a document's pages served at capability
	// URLs, one a run of pages, within limits on what is kept.
	SubpageFor(documentID string, first, last int) (*Subpage, error)
	SubpageUsage(projectID, ownerID string) (SubpageUsage, error)
	CreateSubpage(sp Subpage, data []byte, ttl time.Duration, limits SubpageLimits) (*Subpage, error)
	ExtendSubpage(id string, ttl time.Duration) (*Subpage, error)
	Subpage(id string) (*Subpage, error)
	OpenSubpage(id string) (SubpageFile, error)
	SweepSubpages() (int, error)

	// Webhooks and their deliveries.
	CreateWebhook(projectID, url string, events []string) (*Webhook, error)
	Webhook(id string) (*Webhook, error)
	Webhooks(projectID string) ([]Webhook, error)
	DeleteWebhook(id string) error
	ClaimDelivery(lease time.Duration, busyWebhooks, busyProjects []string) (*Delivery, *Webhook, error)
	ReleaseDeliveries() (int, error)
	NextDeliveryDue() (time.Time, bool)
	DeliveryAttempted(id string, status int, errMsg string, retryAt time.Time) error
	Deliveries(webhookID string, limit int) ([]Delivery, error)

	// The clock expiry times are compared against, and closing.
	Now() time.Time
	Close() error
}

var _ Backend = (*Store)(nil)
