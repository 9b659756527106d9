package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The business rules every Backend applies, written once here so that the
// bbolt and PostgreSQL stores cannot drift apart: each store only keeps
// and finds records, and asks these what the records become.

// HashSecret is how a secret (an API key, a session token) is kept: its
// SHA-256, so that a copy of the data opens nothing.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// keyHintLen is how much of a key's secret is kept in clear to tell keys
// apart in listings: the prefix plus 4 random characters, 20 bits.
const keyHintLen = len(PrefixAPIKey) + 4

// NewProject is a project named name, created at now.
func NewProject(name string, now time.Time) *Project {
	return &Project{ID: NewID(PrefixProject), Name: name, CreatedAt: now.UTC()}
}

// NewAPIKey is a new key of a project, created at now, and its secret,
// which is shown once and kept only as HashSecret(secret).
func NewAPIKey(projectID string, now time.Time) (secret string, k *APIKey) {
	secret = NewSecret(PrefixAPIKey)
	return secret, &APIKey{ID: NewID(PrefixKey), ProjectID: projectID, Hint: secret[:keyHintLen], CreatedAt: now.UTC()}
}

// NewCustomer is a customer of a project named name, created at now.
func NewCustomer(projectID, name string, now time.Time) *Customer {
	return &Customer{ID: NewID(PrefixCustomer), ProjectID: projectID, Name: name, CreatedAt: now.UTC()}
}

// NewDocument makes d, whose original is o, a new document created at
// now, pending, and returns the job that will index it.
func NewDocument(d *Document, o *Original, now time.Time) *Job {
	now = now.UTC()
	d.FileHash, d.Size = o.Hash(), o.Size()
	d.ID = NewID(PrefixDocument)
	d.Status, d.CreatedAt, d.UpdatedAt = StatusPending, now, now
	job := &Job{ID: NewID(PrefixJob), ProjectID: d.ProjectID, OwnerID: d.OwnerID, DocumentID: d.ID,
		Status: StatusPending, CreatedAt: now, UpdatedAt: now}
	d.JobID = job.ID
	return job
}

// NewSubpage is sp, whose PDF is data, created at now and live for ttl.
func NewSubpage(sp Subpage, data []byte, ttl time.Duration, now time.Time) Subpage {
	sp.CreatedAt = now.UTC()
	sp.ExpiresAt = sp.CreatedAt.Add(ttl)
	sp.Size = int64(len(data))
	return sp
}

// NewSession is sess opened at now for ttl, and the token that opens it,
// which is kept only as HashSecret(token).
func NewSession(sess Session, ttl time.Duration, now time.Time) (Session, string) {
	sess.ID = NewID(PrefixSession)
	sess.CreatedAt = now.UTC()
	sess.ExpiresAt = sess.CreatedAt.Add(ttl)
	return sess, NewSecret("")
}

// NewWebhook is a webhook of a project for url's events, with a new
// signing secret, created at now.
func NewWebhook(projectID, url string, events []string, now time.Time) *Webhook {
	return &Webhook{ID: NewID(PrefixWebhook), ProjectID: projectID, URL: url, Events: events,
		Secret: NewSecret(PrefixWebhookSecret), CreatedAt: now.UTC()}
}

// Wants reports whether w listens for events of type eventType.
func (w *Webhook) Wants(eventType string) bool { return slices.Contains(w.Events, eventType) }

// EventDeliveries are the deliveries ev makes among a project's webhooks
// (hooks, in the order they were created): one to every webhook that
// listens for its type, pending and due at ev.At.
func EventDeliveries(hooks []Webhook, ev Event) []Delivery {
	var out []Delivery
	for _, w := range hooks {
		if w.Wants(ev.Type) {
			out = append(out, Delivery{ID: NewID(PrefixDelivery), WebhookID: w.ID, Event: ev,
				Status: DeliveryPending, CreatedAt: ev.At, NextAttempt: ev.At})
		}
	}
	return out
}

// DeliveryOutcome is the status of a delivery whose last attempt is not
// to be retried: delivered, or failed when it ended with errMsg.
func DeliveryOutcome(errMsg string) string {
	if errMsg != "" {
		return DeliveryFailed
	}
	return DeliveryDelivered
}

// JobOutcome is the status of a job that has ended: succeeded, or failed
// when it ended with errMsg.
func JobOutcome(errMsg string) string {
	if errMsg != "" {
		return StatusFailed
	}
	return StatusSucceeded
}

// AfterInterruption is what an interrupted run (the process stopped
// while j was PROCESSING, counted in j.Interrupted already) makes of j:
// PENDING again, or, at maxInterrupted interruptions, FAILED without
// chunks, as a document that stops the server every time it is read; it
// reports whether j failed.
func (j *Job) AfterInterruption(maxInterrupted int) (failed bool) {
	if j.Interrupted < maxInterrupted {
		j.Status = StatusPending
		return false
	}
	j.Status, j.Error, j.Chunks, j.ChunksEmbedded = StatusFailed, fmt.Sprintf(InterruptedError, j.Interrupted), 0, 0
	return true
}

// External ids. A caller may name a document with an id of its own
// (external_id), unique per owner, and upload it again under the same id
// to replace it. Each external id has at most one holder: the document
// that GET /documents?external_id= finds, and whose chunks are searched.
//
//   - A new upload takes a free external id at once, so that it can be
//     found while its job runs; otherwise it waits as a candidate.
//   - A candidate takes over in the transaction that gives the last of
//     its chunks a vector (ReplaceChunks or AddVectors): the holder's record, chunks,
//     vectors, queued job and file reference go, and the external id
//     points at the candidate. Its owner's index drops the old chunks and
//     adds the new ones in the same commit, so searches see one version
//     or the other.
//   - Of two uploads, the later created wins, whatever order their jobs
//     end in: a candidate older than the holder is refused
//     (ErrSuperseded) and its job fails, leaving the holder in place. So
//     does a failed candidate, by never reaching ReplaceChunks.
//   - Deleting the holder frees the external id.

// ErrSuperseded is returned by ReplaceChunks for a document whose external
// id is held by a document created after it.
var ErrSuperseded = errors.New("a newer upload with the same external_id holds it")

// OtherHolder applies the rule above to d, a candidate for its external
// id: it returns the document d takes the id over from, or nil when d
// has none, holds it already, or it is free. A holder created after d
// wins: the result is then ErrSuperseded. holder
// returns the document holding d's external id (d itself when d holds
// it), or ErrNotFound when none does or the entry dangles.
func OtherHolder(d *Document, holder func() (*Document, error)) (*Document, error) {
	if d.ExternalID == "" {
		return nil, nil
	}
	h, err := holder()
	switch {
	case errors.Is(err, ErrNotFound): // free, or a dangling entry: take it
		return nil, nil
	case err != nil:
		return nil, err
	case h.ID == d.ID:
		return nil, nil
	case CreatedBefore(d, h):
		return nil, fmt.Errorf("%w (document %s)", ErrSuperseded, h.ID)
	}
	return h, nil
}

// CreatedBefore reports whether a was created before b: by creation
// sequence, then (for documents older than it) by time, then by id, so
// that any two documents are ordered the same way every time.
func CreatedBefore(a, b *Document) bool {
	switch {
	case a.Seq != b.Seq:
		return a.Seq < b.Seq
	case !a.CreatedAt.Equal(b.CreatedAt):
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}
