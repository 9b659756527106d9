package store

import (
	"errors"
	"time"
)

// ProjectLimits bound what one project keeps; a zero field bounds
// nothing.
type ProjectLimits struct {
	Customers   int   // customers of the project
	Documents   int   // documents of the project and its customers, any status
	StoredBytes int64 // bytes of those documents' originals (see above)
	Sessions    int   // upload sessions alive: not expired, closed or revoked
}

// ProjectUsage is what a project keeps against its limits, and when the
// first of its sessions alive expires and so frees its room. As the
// argument of Check, it is what a create would add.
type ProjectUsage struct {
	Customers         int
	Documents         int
	StoredBytes       int64
	Sessions          int
	NextSessionExpiry time.Time // zero when the project has none alive
}

// Check is nil when more fits within limits on top of u, and otherwise
// the error of the first quota it would go past: ErrCustomerQuota,
// ErrDocumentQuota, ErrStorageQuota or ErrSessionQuota. Only the quotas
// of what more adds are checked: a project over its storage quota may
// still make sessions.
func (u *ProjectUsage) Check(limits ProjectLimits, more ProjectUsage) error {
	switch {
	case more.Customers > 0 && limits.Customers > 0 && u.Customers+more.Customers > limits.Customers:
		return ErrCustomerQuota
	case more.Documents > 0 && limits.Documents > 0 && u.Documents+more.Documents > limits.Documents:
		return ErrDocumentQuota
	case more.StoredBytes > 0 && limits.StoredBytes > 0 && u.StoredBytes+more.StoredBytes > limits.StoredBytes:
		return ErrStorageQuota
	case more.Sessions > 0 && limits.Sessions > 0 && u.Sessions+more.Sessions > limits.Sessions:
		return ErrSessionQuota
	}
	return nil
}

// Errors of a create over a project's quota. Sessions expire, and so
// free their room; the others stay until deleted (customers are not
// deleted at all).
var (
	ErrCustomerQuota = errors.New("the project has as many customers as it may have")
	ErrDocumentQuota = errors.New("the project keeps as many documents as it may keep")
	ErrStorageQuota  = errors.New("the project's documents would take more than its storage quota")
	ErrSessionQuota  = errors.New("the project has as many upload sessions alive as it may have")
)
