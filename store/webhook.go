package store

import (
	"errors"
	"time"
)

// Webhook events.
const (
	EventJobSucceeded = "job.succeeded"
	EventJobFailed    = "job.failed"
)

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // given up on after the retry window
)

// Prefixes of webhook ids.
const (
	PrefixWebhook       = "whk_"
	PrefixEvent         = "evt_"
	PrefixDelivery      = "dlv_"
	PrefixWebhookSecret = "whsec_"
)

// Webhook is an endpoint a project registered for events.
type Webhook struct {
	ID        string    `json:"webhook_id"`
	ProjectID string    `json:"project_id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Secret    string    `json:"secret,omitempty"` // signs deliveries; the receiver holds the same; left out of listings
	CreatedAt time.Time `json:"created_at"`
}

// Event is something that happened that webhooks may hear of.
type Event struct {
	ID         string    `json:"event_id"`
	Type       string    `json:"type"`
	JobID      string    `json:"job_id"`
	OwnerID    string    `json:"owner_id"`
	DocumentID string    `json:"document_id"`
	Status     string    `json:"status"`
	Error      string    `json:"error,omitempty"`
	Chunks     int       `json:"chunks"`
	At         time.Time `json:"at"`
}

// Delivery is one event on its way to one webhook.
type Delivery struct {
	ID          string    `json:"delivery_id"`
	WebhookID   string    `json:"webhook_id"`
	Event       Event     `json:"event"`
	Status      string    `json:"status"`
	Attempts    int       `json:"attempts"`
	LastStatus  int       `json:"last_status,omitempty"` // the receiver's HTTP status
	LastError   string    `json:"last_error,omitempty"`
	NextAttempt time.Time `json:"next_attempt_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	QueueKey    []byte    `json:"queue_key,omitempty"` // its key in the outbox while pending
	Claimed     bool      `json:"claimed,omitempty"`   // a sender holds it; its due time is the lease's end
}

// JobEvent is the event of a job that has ended, at time at.
func JobEvent(j *Job, at time.Time) Event {
	typ := EventJobSucceeded
	if j.Status == StatusFailed {
		typ = EventJobFailed
	}
	return Event{ID: NewID(PrefixEvent), Type: typ, JobID: j.ID, OwnerID: j.OwnerID, DocumentID: j.DocumentID,
		Status: j.Status, Error: j.Error, Chunks: j.Chunks, At: at}
}

// ErrNoDelivery is returned by ClaimDelivery when none is due.
var ErrNoDelivery = errors.New("no delivery is due")
