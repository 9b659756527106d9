package store

import (
	"errors"
	"time"
)

// Project quotas bound what one project keeps: its customers, its
// documents (the project's own and its customers', whatever their
// status), the bytes of their originals, and its upload sessions alive.
// The store checks them in the transaction that would go past them, so
// that two creates at once, or on two nodes, cannot both take the room
// left for one; a create refused changes nothing.
//
// What they count is kept up to date in the transactions that change it,
// never counted from the records when asked: a counter per project for
// customers, documents and bytes, and for sessions, whose time runs out
// without a write, an index by project and expiry in which those alive
// are the ones past now.
//
// Stored bytes are the sizes of the project's documents, each counted in
// full even when its content is stored once for several documents of an
// owner (the same file uploaded twice): what a project keeps is then the
// sum of what GET /documents lists, the same in both stores (the bbolt
// store keeps a short text once per document, PostgreSQL once per
// content), and it is what the server's work follows, since each
// document is chunked, embedded and indexed on its own. A delete gives
// its document's size back at once, in its transaction, whether or not
// the file stays for another document.

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
