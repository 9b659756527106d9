package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// The jobs table is the queue: a job is queued while its due_at is set.
// Outside a cluster jobs run as in the bbolt store, with RequeueInterrupted
// at start. In a cluster (see cluster.go) a claimed job is leased to its
// node, and RequeueInterrupted leaves the queue alone: other nodes may be
// running those jobs.

const jobColumns = `id, project_id, owner_id, document_id, status, error, chunks, chunks_embedded,
	searchable_at, attempts, not_before, created_at, updated_at, pages_done, pages, interrupted`

func scanJob(row pgx.Row) (*store.Job, error) {
	var j store.Job
	var searchable, notBefore *time.Time
	var done, pages *int
	err := row.Scan(&j.ID, &j.ProjectID, &j.OwnerID, &j.DocumentID, &j.Status, &j.Error, &j.Chunks,
		&j.ChunksEmbedded, &searchable, &j.Attempts, &notBefore, &j.CreatedAt, &j.UpdatedAt, &done, &pages, &j.Interrupted)
	if err != nil {
		return nil, notFound(err)
	}
	if searchable != nil {
		j.SearchableAt = searchable.UTC()
	}
	if notBefore != nil {
		j.NotBefore = notBefore.UTC()
	}
	if done != nil && pages != nil {
		j.Progress = &store.JobProgress{PagesDone: *done, Pages: *pages}
	}
	j.CreatedAt, j.UpdatedAt = j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	return &j, nil
}

// Job returns a job by id.
func (s *Store) Job(id string) (*store.Job, error) {
	ctx, cancel := opContext()
	defer cancel()
	return scanJob(s.pool.QueryRow(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = $1", id))
}

// ClaimJob takes the next due job in the fair queue's order (see the bbolt
// store's fairqueue.go) whose project is not in skip, marks it PROCESSING
// and returns it with its document. It returns store.ErrNoJob when none is
// due. Claimers skip the jobs others hold locked, so each job goes to one
// of them.
func (s *Store) ClaimJob(skip []string) (*store.Job, *store.Document, error) {
	ctx, cancel := opContext()
	defer cancel()
	var job *store.Job
	var doc *store.Document
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.timestamp()
		if s.node != "" {
			// Jobs whose lease ran out: their node died or stalled.
			if _, _, err := s.requeueInterrupted(ctx, tx, now, "lease_until < now()"); err != nil {
				return err
			}
		}
		if skip == nil {
			skip = []string{}
		}
		for {
			var id, docID, project, owner string
			var ptag, otag int64
			placed, args := "true", []any{now, skip}
			if s.node != "" {
				placed, args = placedHereArg(3), append(args, s.node)
			}
			err := tx.QueryRow(ctx, `SELECT j.id, j.document_id, j.project_id, j.owner_id,
					greatest(coalesce(p.next, 0), (SELECT v FROM fair_clock), 1) AS ptag,
					greatest(coalesce(o.next, 0), coalesce(p.clock, 0), 1) AS otag
				FROM jobs j
				LEFT JOIN fair_projects p ON p.project_id = j.project_id
				LEFT JOIN fair_owners o ON o.owner_id = j.owner_id
				WHERE j.due_at <= $1 AND NOT (j.project_id = ANY ($2)) AND `+placed+`
				ORDER BY ptag, j.project_id COLLATE "C", otag, j.owner_id COLLATE "C", j.due_at, j.queue_seq LIMIT 1 FOR UPDATE OF j SKIP LOCKED`,
				args...).Scan(&id, &docID, &project, &owner, &ptag, &otag)
			if errors.Is(err, pgx.ErrNoRows) {
				// Committed all the same: the jobs whose lease ran out
				// were counted and requeued or failed.
				job = nil
				return nil
			}
			if err != nil {
				return err
			}
			doc, err = scanDoc(tx.QueryRow(ctx, `UPDATE documents SET status = $2, updated_at = $3
				WHERE id = $1 RETURNING `+docColumns, docID, store.StatusProcessing, now))
			if errors.Is(err, store.ErrNotFound) {
				// Its document went while it waited: end it, or it would
				// head the queue for ever.
				if _, err := tx.Exec(ctx, `UPDATE jobs SET status = $2, error = $3, updated_at = $4, due_at = NULL
					WHERE id = $1`, id, store.StatusFailed, "the document was deleted before it was processed", now); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			if err := tookTurn(ctx, tx, project, ptag, owner, otag); err != nil {
				return err
			}
			job, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET status = $2, attempts = attempts + 1,
				updated_at = $3, started_at = $3, due_at = NULL, queue_seq = NULL, pages_done = NULL, pages = NULL,
				node_id = NULLIF($4, ''), lease_until = CASE WHEN $4 = '' THEN NULL ELSE now() + make_interval(secs => $5) END
				WHERE id = $1 RETURNING `+jobColumns, id, store.StatusProcessing, now, s.node, jobLease.Seconds()))
			return err
		}
	})
	if err == nil && job == nil {
		return nil, nil, store.ErrNoJob
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: claim job: %w", err)
	}
	if s.node != "" {
		s.leases.add(job.ID)
	}
	return job, doc, nil
}

// NextDue returns when the earliest queued job becomes due, or false when
// the queue is empty (or the database cannot say: workers then sleep
// their longest and ask again).
func (s *Store) NextDue() (time.Time, bool) {
	ctx, cancel := opContext()
	defer cancel()
	if s.node != "" {
		return s.nextDueHere(ctx)
	}
	var next *time.Time
	if err := s.pool.QueryRow(ctx, "SELECT min(due_at) FROM jobs WHERE due_at IS NOT NULL").Scan(&next); err != nil || next == nil {
		return time.Time{}, false
	}
	return next.UTC(), true
}

// nextDueHere is NextDue in a cluster: the earliest of the jobs placed on
// this node and of the leases that run out, and never later than liveFor
// from now, because placement moves without a notification when a node
// dies (new jobs and ended ones do notify; see Listen).
func (s *Store) nextDueHere(ctx context.Context) (time.Time, bool) {
	var due, lease *time.Time
	err := s.pool.QueryRow(ctx, `SELECT (SELECT min(due_at) FROM jobs j WHERE due_at IS NOT NULL AND `+placedHereArg(1)+`),
		(SELECT min(lease_until) FROM jobs WHERE status = $2)`, s.node, store.StatusProcessing).Scan(&due, &lease)
	next := s.now().Add(liveFor)
	if err != nil {
		return next, true
	}
	for _, t := range []*time.Time{due, lease} {
		if t != nil && t.Before(next) {
			next = *t
		}
	}
	return next.UTC(), true
}

// FinishJob ends a job as SUCCEEDED (errMsg empty) or FAILED, and its
// document with it, and queues the event for the project's webhooks in the
// same transaction: an ended job is never without its deliveries.
func (s *Store) FinishJob(jobID string, chunks, pages int, errMsg string) error {
	status := store.JobOutcome(errMsg)
	ctx, cancel := opContext()
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.timestamp()
		var docID, owner string
		if err := chargeRun(ctx, tx, jobID, now); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `UPDATE jobs SET status = $2, error = $3, chunks = $4, chunks_embedded = $4,
			pages_done = NULL, pages = NULL, updated_at = $5, node_id = NULL, lease_until = NULL
			WHERE id = $1 AND `+heldBy(6)+` RETURNING document_id, owner_id`,
			jobID, status, errMsg, chunks, now, s.node).Scan(&docID, &owner)
		if err != nil {
			return s.notHeld(ctx, tx, jobID, err)
		}
		if _, err = tx.Exec(ctx, `UPDATE documents SET status = $2, error = $3, chunks = $4, pages = $5, updated_at = $6
			WHERE id = $1`, docID, status, errMsg, chunks, pages, now); err != nil {
			return err
		}
		if err := s.queueJobEvent(ctx, tx, jobID, now); err != nil {
			return err
		}
		return s.notifyJob(ctx, tx, jobID, owner)
	})
	s.leases.remove(jobID)
	if err != nil {
		return fmt.Errorf("store: update job %s: %w", jobID, err)
	}
	return nil
}

// SetJobProgress records how far a running job has got. It changes only a
// PROCESSING job: a report that arrives after the job ended is dropped
// (and reported as store.ErrNotFound when the job is gone).
func (s *Store) SetJobProgress(jobID string, p store.JobProgress) error {
	ctx, cancel := opContext()
	defer cancel()
	var status string
	err := s.pool.QueryRow(ctx, `WITH j AS (SELECT id, status FROM jobs WHERE id = $1),
		u AS (UPDATE jobs SET pages_done = $2, pages = $3, updated_at = $4
			WHERE id = $1 AND status = $5)
		SELECT status FROM j`, jobID, p.PagesDone, p.Pages, s.timestamp(), store.StatusProcessing).Scan(&status)
	if err != nil {
		return fmt.Errorf("store: record progress of job %s: %w", jobID, notFound(err))
	}
	return nil
}

// RetryJob puts a job back in the queue, due at notBefore, keeping errMsg as
// the reason it waits.
func (s *Store) RetryJob(jobID string, notBefore time.Time, errMsg string) error {
	ctx, cancel := opContext()
	defer cancel()
	notBefore = notBefore.UTC().Truncate(time.Microsecond)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.timestamp()
		var docID, owner string
		if err := chargeRun(ctx, tx, jobID, now); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `UPDATE jobs SET status = $2, error = $3, not_before = $4, updated_at = $5,
			pages_done = NULL, pages = NULL, due_at = $4, queue_seq = nextval('job_queue_seq'),
			node_id = NULL, lease_until = NULL
			WHERE id = $1 AND `+heldBy(6)+` RETURNING document_id, owner_id`, jobID, store.StatusPending, errMsg, notBefore, now, s.node).Scan(&docID, &owner)
		if err != nil {
			return s.notHeld(ctx, tx, jobID, err)
		}
		if _, err = tx.Exec(ctx, "UPDATE documents SET status = $2, error = $3, updated_at = $4 WHERE id = $1",
			docID, store.StatusPending, errMsg, now); err != nil {
			return err
		}
		return s.notifyJob(ctx, tx, jobID, owner)
	})
	s.leases.remove(jobID)
	if err != nil {
		return fmt.Errorf("store: retry job %s: %w", jobID, err)
	}
	return nil
}

// RequeueInterrupted returns the jobs that were PROCESSING when the process
// stopped to PENDING, due now, counting the interruption against each; a
// job interrupted maxInterrupted times FAILs instead (see the bbolt
// store's). It returns how many were requeued and the jobs that failed. In
// a cluster the jobs of a node that stopped are found by their lease
// instead, when it runs out (ClaimJob), and counted the same way, with the
// limit the store was opened with.
func (s *Store) RequeueInterrupted(maxInterrupted int) (int, []*store.Job, error) {
	s.maxInterrupted.Store(int64(maxInterrupted))
	if s.node != "" {
		return 0, nil, nil // in a cluster, by lease: see ClaimJob
	}
	ctx, cancel := opContext()
	defer cancel()
	var n int
	var failed []*store.Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		n, failed, err = s.requeueInterrupted(ctx, tx, s.timestamp(), "true")
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: requeue interrupted jobs: %w", err)
	}
	return n, failed, nil
}

// requeueInterrupted counts an interruption against each PROCESSING job
// that the SQL condition which selects, then queues it again, due at now,
// or fails it once it was interrupted maxInterrupted times: its chunks go,
// its document and job end FAILED, and its event is queued.
func (s *Store) requeueInterrupted(ctx context.Context, tx pgx.Tx, now time.Time, which string) (int, []*store.Job, error) {
	rows, err := tx.Query(ctx, `UPDATE jobs SET interrupted = interrupted + 1, updated_at = $2,
			pages_done = NULL, pages = NULL, node_id = NULL, lease_until = NULL
		WHERE status = $1 AND `+which+` RETURNING `+jobColumns, store.StatusProcessing, now)
	if err != nil {
		return 0, nil, err
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Job, error) { return scanJob(row) })
	if err != nil {
		return 0, nil, err
	}
	max := int(s.maxInterrupted.Load())
	requeued := 0
	var failed []*store.Job
	for _, j := range jobs {
		if !j.AfterInterruption(max) {
			if _, err := tx.Exec(ctx, `UPDATE jobs SET status = $2, due_at = $3, queue_seq = nextval('job_queue_seq') WHERE id = $1`,
				j.ID, j.Status, now); err != nil {
				return 0, nil, err
			}
			if _, err := tx.Exec(ctx, "UPDATE documents SET status = $2, updated_at = $3 WHERE id = $1", j.DocumentID, store.StatusPending, now); err != nil {
				return 0, nil, err
			}
			requeued++
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET status = $2, error = $3, chunks = 0, chunks_embedded = 0, due_at = NULL
			WHERE id = $1`, j.ID, j.Status, j.Error); err != nil {
			return 0, nil, err
		}
		d, err := lockDocument(ctx, tx, j.DocumentID)
		switch {
		case err == nil:
			if _, err := deleteChunks(ctx, tx, d); err != nil {
				return 0, nil, err
			}
			if _, err := tx.Exec(ctx, "UPDATE documents SET status = $2, error = $3, chunks = 0, updated_at = $4 WHERE id = $1",
				d.ID, j.Status, j.Error, now); err != nil {
				return 0, nil, err
			}
			if err := s.notifyChunks(ctx, tx, j.OwnerID); err != nil {
				return 0, nil, err
			}
		case !errors.Is(err, store.ErrNotFound):
			return 0, nil, err
		}
		if err := s.queueEvent(ctx, tx, j.ProjectID, store.JobEvent(j, now)); err != nil {
			return 0, nil, err
		}
		if err := s.notifyJob(ctx, tx, j.ID, j.OwnerID); err != nil {
			return 0, nil, err
		}
		failed = append(failed, j)
	}
	return requeued, failed, nil
}

// PendingJobs returns how many jobs wait in the queue, due or backing off,
// and when the oldest of them was created (zero when none waits).
func (s *Store) PendingJobs() (n int, oldest time.Time, err error) {
	ctx, cancel := opContext()
	defer cancel()
	var first *time.Time
	if err := s.pool.QueryRow(ctx, "SELECT count(*), min(created_at) FROM jobs WHERE due_at IS NOT NULL").
		Scan(&n, &first); err != nil {
		return 0, time.Time{}, fmt.Errorf("store: count pending jobs: %w", err)
	}
	if first != nil {
		oldest = first.UTC()
	}
	return n, oldest, nil
}

// heldBy is the SQL condition that this node may record the outcome of the
// job row: always outside a cluster (an empty node id), and in one only
// while this node holds the job's lease.
func heldBy(n int) string {
	return fmt.Sprintf("($%d = '' OR node_id = $%d)", n, n)
}

// notHeld explains why an outcome's UPDATE changed no row: the job is
// unknown, or (in a cluster) its lease went to another node.
func (s *Store) notHeld(ctx context.Context, tx pgx.Tx, jobID string, err error) error {
	if !errors.Is(err, pgx.ErrNoRows) || s.node == "" {
		return notFound(err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1)", jobID).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return store.ErrNotFound
	}
	return ErrLeaseLost
}

// tookTurn moves the project and the owner of a claimed job one step on
// from the tags they were claimed at, and the queue's clock to the
// project's tag.
func tookTurn(ctx context.Context, tx pgx.Tx, project string, ptag int64, owner string, otag int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO fair_owners (owner_id, next) VALUES ($1, $2)
		ON CONFLICT (owner_id) DO UPDATE SET next = excluded.next`, owner, otag+1); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO fair_projects (project_id, next, clock) VALUES ($1, $2, $3)
		ON CONFLICT (project_id) DO UPDATE SET next = excluded.next, clock = excluded.clock`, project, ptag+1, otag); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "UPDATE fair_clock SET v = greatest(v, $1)", ptag)
	return err
}

// chargeRun moves the tags of a running job's project and owner on by the
// time its run took beyond its one turn (store.CostUnit each; see the
// bbolt store), as the run ends.
func chargeRun(ctx context.Context, tx pgx.Tx, jobID string, now time.Time) error {
	_, err := tx.Exec(ctx, `WITH j AS (
			SELECT project_id, owner_id, floor(extract(epoch FROM ($2 - started_at)) / $3)::bigint AS steps
			FROM jobs WHERE id = $1 AND status = $4 AND started_at IS NOT NULL),
		o AS (UPDATE fair_owners SET next = next + j.steps FROM j WHERE fair_owners.owner_id = j.owner_id AND j.steps > 0)
		UPDATE fair_projects SET next = next + j.steps FROM j WHERE fair_projects.project_id = j.project_id AND j.steps > 0`,
		jobID, now, store.CostUnit.Seconds(), store.StatusProcessing)
	return err
}
