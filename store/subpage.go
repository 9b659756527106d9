package store

import (
	"errors"
	"io"
	"time"
)

// Subpage is a small PDF of a run of a document's pages. Every request
// for the same pages of a document, whatever chunk and varience named
// them, shares one subpage: a slice is made once. Its id is the capability
// in its URL, so it is a secret-sized random value.
type Subpage struct {
	ID         string    `json:"subpage_id"`
	ProjectID  string    `json:"project_id"`
	OwnerID    string    `json:"owner_id"`
	DocumentID string    `json:"document_id"`
	FirstPage  int       `json:"first_page"`
	LastPage   int       `json:"last_page"`
	Size       int64     `json:"size"` // bytes of its PDF
	FileName   string    `json:"file_name"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// Expired reports whether the subpage can no longer be fetched at t.
func (sp *Subpage) Expired(t time.Time) bool { return !t.Before(sp.ExpiresAt) }

// SubpageFile is a subpage's PDF, open for reading a piece at a time: a
// download never holds the whole file in memory.
type SubpageFile interface {
	io.ReadSeeker
	io.Closer
}

// SubpageLimits bound the live subpages CreateSubpage keeps; a zero field
// bounds nothing.
type SubpageLimits struct {
	OwnerBytes      int64 // bytes of one owner's live subpages
	ProjectSubpages int   // live subpages of one project
}

// SubpageUsage is what a project, and one owner in it, keep in live
// subpages, and when the first of them expires and so frees its room.
type SubpageUsage struct {
	ProjectSubpages   int
	NextProjectExpiry time.Time // zero when the project has none
	OwnerBytes        int64
	NextOwnerExpiry   time.Time // zero when the owner has none
}

// Check is nil when a subpage of size more bytes fits within limits, and
// otherwise ErrSubpageQuota or ErrSubpageBudget.
func (u *SubpageUsage) Check(limits SubpageLimits, size int64) error {
	if limits.ProjectSubpages > 0 && u.ProjectSubpages >= limits.ProjectSubpages {
		return ErrSubpageQuota
	}
	if limits.OwnerBytes > 0 && u.OwnerBytes+size > limits.OwnerBytes {
		return ErrSubpageBudget
	}
	return nil
}

// Errors of CreateSubpage over its limits: both pass as live subpages
// expire.
var (
	ErrSubpageBudget = errors.New("the owner's live subpages would take more than its subpage budget")
	ErrSubpageQuota  = errors.New("the project has as many live subpages as it may keep")
)

// NewSubpageID returns an unguessable subpage id.
func NewSubpageID() string { return NewSecret(PrefixSubpage) }
