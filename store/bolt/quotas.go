package bolt

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// Project quotas (see store/quota.go for what they count and when they
// are checked) are counted here in a bucket of counters per project, and
// sessions alive from their index by project and expiry (sessions.go).

// bucketProjectUsage holds each project's counters: project id →
// customers(8) documents(8) stored bytes(8), big-endian.
var bucketProjectUsage = []byte("projectusage")

// usageCounters reads a project's counters; its sessions are not among
// them (see aliveSessions).
func usageCounters(tx *bbolt.Tx, projectID string) store.ProjectUsage {
	v := tx.Bucket(bucketProjectUsage).Get([]byte(projectID))
	if len(v) != 24 {
		return store.ProjectUsage{}
	}
	// A counter never goes below zero; should a bug take it there, it
	// reads as zero rather than as the most a uint64 holds.
	n := func(b []byte) int64 { return max(int64(binary.BigEndian.Uint64(b)), 0) }
	return store.ProjectUsage{Customers: int(n(v[:8])), Documents: int(n(v[8:16])), StoredBytes: n(v[16:])}
}

// addUsage adds delta's customers, documents and bytes (negative to take
// them away) to a project's counters.
func addUsage(tx *bbolt.Tx, projectID string, delta store.ProjectUsage) error {
	u := usageCounters(tx, projectID)
	v := make([]byte, 0, 24)
	v = binary.BigEndian.AppendUint64(v, uint64(max(u.Customers+delta.Customers, 0)))
	v = binary.BigEndian.AppendUint64(v, uint64(max(u.Documents+delta.Documents, 0)))
	v = binary.BigEndian.AppendUint64(v, uint64(max(u.StoredBytes+delta.StoredBytes, 0)))
	return tx.Bucket(bucketProjectUsage).Put([]byte(projectID), v)
}

// ProjectUsage returns what a project keeps against its limits. Its
// counters are read as they are; its sessions alive are counted from
// their index, which holds as many as the project has alive and not many
// more (the sweep takes those ended).
func (s *Store) ProjectUsage(projectID string) (store.ProjectUsage, error) {
	var u store.ProjectUsage
	err := s.db.View(func(tx *bbolt.Tx) error {
		u = usageCounters(tx, projectID)
		u.Sessions, u.NextSessionExpiry = aliveSessions(tx, projectID, s.now(), 0)
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("store: usage of project %s: %w", projectID, err)
	}
	return u, nil
}

// CheckQuotas is nil when more fits within limits on top of what a
// project keeps now, and otherwise the error of the quota it would go
// past, as a create of more would find it. It reads only what more adds
// to (sessions alive are counted up to limits.Sessions), so that it is
// cheap enough to ask before a create's costly part, such as an upload's
// body; the create checks again in its transaction.
func (s *Store) CheckQuotas(projectID string, limits store.ProjectLimits, more store.ProjectUsage) error {
	if limits == (store.ProjectLimits{}) {
		return nil
	}
	return s.db.View(func(tx *bbolt.Tx) error {
		u := usageCounters(tx, projectID)
		if more.Sessions > 0 && limits.Sessions > 0 {
			u.Sessions, _ = aliveSessions(tx, projectID, s.now(), limits.Sessions)
		}
		return u.Check(limits, more)
	})
}

// countProjectUsage fills the projects' counters and the sessions' index
// from the records of data written before they were kept (schema 9 and
// older).
func countProjectUsage(tx *bbolt.Tx) error {
	counts := map[string]store.ProjectUsage{}
	err := tx.Bucket(bucketCustomers).ForEach(func(k, v []byte) error {
		var c struct {
			ProjectID string `json:"project_id"`
		}
		if err := decode(v, &c); err != nil {
			return fmt.Errorf("%w (customer %s)", err, k)
		}
		u := counts[c.ProjectID]
		u.Customers++
		counts[c.ProjectID] = u
		return nil
	})
	if err != nil {
		return err
	}
	err = tx.Bucket(bucketDocuments).ForEach(func(k, v []byte) error {
		var d struct {
			ProjectID string `json:"project_id"`
			Size      int64  `json:"size"`
		}
		if err := decode(v, &d); err != nil {
			return fmt.Errorf("%w (document %s)", err, k)
		}
		u := counts[d.ProjectID]
		u.Documents++
		u.StoredBytes += d.Size
		counts[d.ProjectID] = u
		return nil
	})
	if err != nil {
		return err
	}
	for project, u := range counts {
		if err := addUsage(tx, project, u); err != nil {
			return err
		}
	}
	return indexProjectSessions(tx)
}
