package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// Project quotas: what one project may keep, its customers, documents
// (its own and its customers', whatever their status), their originals'
// bytes and its upload sessions alive. The store checks them in the
// transaction that would go past them (store.ProjectLimits), so that
// creates at once, or on several nodes, cannot both take the room left
// for one; a request over one changes nothing. Uploads are checked here
// too before their body is read, so that one refused costs neither the
// bandwidth nor the disk of its file.
//
// A session over its quota is a 429 with Retry-After: sessions expire,
// so waiting frees room, and Retry-After says when the first one does.
// The others are 403: documents and customers never expire, so waiting
// helps nothing (a 429 would have a client retry for ever), while
// deleting documents or a higher quota does; it is not a 507, since the
// server's disk is not full (that is the 507 its operator must hear of),
// nor a 413, since the upload itself is within the limits.

func (s *Server) projectLimits() store.ProjectLimits {
	return store.ProjectLimits{
		Customers: s.cfg.MaxCustomersPerProject, Documents: s.cfg.MaxDocumentsPerProject,
		StoredBytes: s.cfg.MaxStoredBytesPerProject, Sessions: s.cfg.MaxSessionsPerProject,
	}
}

// projectRoom is nil when more (a customer, a session, or a document of
// more.StoredBytes bytes, 0 when its size is not known yet and so of at
// least one) fits within the project's quotas, and otherwise the answer
// that names the quota, what the project keeps, and what to do.
func (s *Server) projectRoom(c echo.Context, projectID string, more store.ProjectUsage) error {
	limits := s.projectLimits()
	size := more.StoredBytes
	if more.Documents > 0 {
		more.StoredBytes = max(size, 1)
	}
	// The check reads what more adds to alone; the usage, read for the
	// message, counts every session alive too.
	if err := s.store.CheckQuotas(projectID, limits, more); !isQuotaError(err) {
		return err
	}
	u, err := s.store.ProjectUsage(projectID)
	if err != nil {
		return err
	}
	const makeRoom = "delete documents it no longer needs (DELETE /documents/{document_id}) to make room, or ask the server's operator for a higher quota"
	switch err := u.Check(limits, more); {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrCustomerQuota):
		return errorf(http.StatusForbidden, "project %s has %d customers, as many as its quota of %d allows: customers are not deleted, so more need a higher quota from the server's operator (--max-customers-per-project)",
			projectID, u.Customers, limits.Customers)
	case errors.Is(err, store.ErrDocumentQuota):
		return errorf(http.StatusForbidden, "project %s keeps %d documents (its own and its customers', whatever their status), as many as its quota of %d allows: %s (--max-documents-per-project)",
			projectID, u.Documents, limits.Documents, makeRoom)
	case errors.Is(err, store.ErrStorageQuota):
		msg := fmt.Sprintf("the documents of project %s take %s of its storage quota of %s", projectID, humanBytes(u.StoredBytes), humanBytes(limits.StoredBytes))
		if size > 0 {
			msg += fmt.Sprintf(", and this one would take %s more", humanBytes(size))
		}
		return errorf(http.StatusForbidden, "%s: %s (--max-stored-bytes-per-project)", msg, makeRoom)
	}
	msg := fmt.Sprintf("project %s has %d upload sessions alive, as many as its quota of %d allows: a session frees its room when it expires, %s after it was made, or when its page is left with Done or Cancel",
		projectID, u.Sessions, limits.Sessions, durationWords(s.cfg.SessionTTL))
	if !u.NextSessionExpiry.IsZero() {
		wait := max(u.NextSessionExpiry.Sub(s.store.Now()), time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		msg += "; the first of them expires at " + u.NextSessionExpiry.UTC().Format(time.RFC3339)
	}
	return errorf(http.StatusTooManyRequests, "%s", msg)
}

// overQuota answers err, a create's, when the store refused it over a
// quota of the project's (with projectRoom's answer for more, what it
// would have added), and returns any other err as it is.
func (s *Server) overQuota(c echo.Context, err error, projectID string, more store.ProjectUsage) error {
	if !isQuotaError(err) {
		return err
	}
	if refused := s.projectRoom(c, projectID, more); refused != nil {
		return refused
	}
	// Room was freed since (a delete, an expiry): the same request
	// may fit now.
	c.Response().Header().Set("Retry-After", "1")
	return errorf(http.StatusTooManyRequests, "project %s was at its quota when this request was stored, and room has been freed since: try again", projectID)
}

func isQuotaError(err error) bool {
	return errors.Is(err, store.ErrCustomerQuota) || errors.Is(err, store.ErrDocumentQuota) ||
		errors.Is(err, store.ErrStorageQuota) || errors.Is(err, store.ErrSessionQuota)
}
