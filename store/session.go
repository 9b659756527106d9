package store

import "time"

// Session is an upload session: a capability URL a project's backend hands
// to an end user, good for one owner until it expires. The token is in the
// URL; only its hash is stored, so a copy of the database opens no session.
type Session struct {
	ID         string    `json:"session_id"`
	ProjectID  string    `json:"project_id"`
	OwnerID    string    `json:"owner_id"`
	CustomerID string    `json:"customer_id,omitempty"`
	KeyID      string    `json:"key_id,omitempty"` // the API key that created it: revoking the key ends the session
	Services   []string  `json:"services"`
	SuccessURL string    `json:"success_url"`
	CancelURL  string    `json:"cancel_url"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// Closed is how the end user left the page, SessionDone or
	// SessionCancelled, or SessionRevoked, which ended the session then;
	// empty while open.
	Closed string `json:"closed,omitempty"`
}

// How an end user leaves a session's page: Done or Cancel.
const (
	SessionDone      = "done"
	SessionCancelled = "cancelled"
	SessionRevoked   = "revoked" // the API key that made it was revoked
)

// Expired reports whether the session can no longer be used at t: it
// expired, or was closed before.
func (s *Session) Expired(t time.Time) bool { return !t.Before(s.ExpiresAt) }

// EndedSessionKept is how long a session that ended (expired, closed or
// revoked) is kept before SweepSessions removes it: its link says for an
// hour why it no longer opens ("expired", "closed") rather than that it
// is unknown, and a project that makes and closes sessions in a loop
// keeps an hour of them at most.
const EndedSessionKept = time.Hour

// SessionMetaKey is the document metadata key that names the upload
// session a document came through (projects see it in GET /documents).
// The store keeps an index of it, so that a session's uploads are found
// without reading every document of its owner, which a hosted page asks
// for on every upload.
const SessionMetaKey = "session_id"
