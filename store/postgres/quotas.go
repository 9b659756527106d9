package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// Project quotas are counted as store/quota.go says, as on bbolt:
// project_usage holds each project's customers, documents and stored
// bytes, changed in the transactions that change them, and sessions
// alive are counted from their index by project and expiry.
//
// addUsage is the last statement of the transactions that create: its
// upsert locks the project's row until the commit, so creates of one
// project at the edge of a quota go one after the other, whichever nodes
// they are on, and it is held for the commit alone, not while an
// original's pieces are written.

// addUsage adds delta's customers, documents and bytes to a project's
// counters and returns them as they were before.
func addUsage(ctx context.Context, tx pgx.Tx, projectID string, delta store.ProjectUsage) (store.ProjectUsage, error) {
	var u store.ProjectUsage
	err := tx.QueryRow(ctx, `INSERT INTO project_usage AS u (project_id, customers, documents, stored_bytes)
		VALUES ($1, greatest($2::bigint, 0), greatest($3::bigint, 0), greatest($4::bigint, 0))
		ON CONFLICT (project_id) DO UPDATE SET
			customers = greatest(u.customers + $2::bigint, 0),
			documents = greatest(u.documents + $3::bigint, 0),
			stored_bytes = greatest(u.stored_bytes + $4::bigint, 0)
		RETURNING customers - $2::bigint, documents - $3::bigint, stored_bytes - $4::bigint`,
		projectID, delta.Customers, delta.Documents, delta.StoredBytes).Scan(&u.Customers, &u.Documents, &u.StoredBytes)
	if err != nil {
		return u, fmt.Errorf("count project usage: %w", err)
	}
	return u, nil
}

// addUsageWithin is addUsage of what a create adds, refused with the
// quota's error (the caller rolls back) when it takes the project past
// limits.
func addUsageWithin(ctx context.Context, tx pgx.Tx, projectID string, limits store.ProjectLimits, more store.ProjectUsage) error {
	was, err := addUsage(ctx, tx, projectID, more)
	if err != nil {
		return err
	}
	return was.Check(limits, more)
}

// CheckQuotas is nil when more fits within limits on top of what a
// project keeps now, and otherwise the error of the quota it would go
// past, as a create of more would find it: a check cheap enough to ask
// before a create's costly part, which checks again in its transaction.
func (s *Store) CheckQuotas(projectID string, limits store.ProjectLimits, more store.ProjectUsage) error {
	ctx, cancel := opContext()
	defer cancel()
	return s.checkQuotas(ctx, projectID, limits, more)
}

func (s *Store) checkQuotas(ctx context.Context, projectID string, limits store.ProjectLimits, more store.ProjectUsage) error {
	if limits == (store.ProjectLimits{}) {
		return nil
	}
	u, err := usageCounters(ctx, s.pool, projectID)
	if err == nil && more.Sessions > 0 && limits.Sessions > 0 {
		u.Sessions, _, err = aliveSessions(ctx, s.pool, projectID, s.timestamp(), limits.Sessions)
	}
	if err != nil {
		return fmt.Errorf("store: check the quotas of project %s: %w", projectID, err)
	}
	return u.Check(limits, more)
}

func usageCounters(ctx context.Context, q rowQuerier, projectID string) (store.ProjectUsage, error) {
	var u store.ProjectUsage
	err := q.QueryRow(ctx, `SELECT coalesce(max(customers), 0), coalesce(max(documents), 0), coalesce(max(stored_bytes), 0)
		FROM project_usage WHERE project_id = $1`, projectID).Scan(&u.Customers, &u.Documents, &u.StoredBytes)
	if err != nil {
		return u, fmt.Errorf("read project usage: %w", err)
	}
	return u, nil
}

// aliveSessions counts a project's sessions alive at now, up to limit
// when it is above 0, and returns when the first of them expires (when
// it counts them all).
func aliveSessions(ctx context.Context, q rowQuerier, projectID string, now time.Time, limit int) (int, time.Time, error) {
	var n int
	var next *time.Time
	var err error
	if limit > 0 {
		err = q.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM sessions
			WHERE project_id = $1 AND expires_at > $2 LIMIT $3) alive`, projectID, now, limit).Scan(&n)
	} else {
		err = q.QueryRow(ctx, "SELECT count(*), min(expires_at) FROM sessions WHERE project_id = $1 AND expires_at > $2",
			projectID, now).Scan(&n, &next)
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count sessions: %w", err)
	}
	if next == nil {
		return n, time.Time{}, nil
	}
	return n, next.UTC(), nil
}

// ProjectUsage returns what a project keeps against its limits.
func (s *Store) ProjectUsage(projectID string) (store.ProjectUsage, error) {
	ctx, cancel := opContext()
	defer cancel()
	u, err := usageCounters(ctx, s.pool, projectID)
	if err == nil {
		u.Sessions, u.NextSessionExpiry, err = aliveSessions(ctx, s.pool, projectID, s.timestamp(), 0)
	}
	if err != nil {
		return u, fmt.Errorf("store: usage of project %s: %w", projectID, err)
	}
	return u, nil
}

// SweepSessions removes the sessions that ended more than
// store.EndedSessionKept ago and returns how many it removed. The
// documents uploaded through them stay.
func (s *Store) SweepSessions() (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM sessions WHERE expires_at <= $1", s.timestamp().Add(-store.EndedSessionKept))
	if err != nil {
		return 0, fmt.Errorf("store: sweep sessions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
