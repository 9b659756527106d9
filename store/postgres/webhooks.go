package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// The deliveries table is the outbox: a delivery is queued while its
// due_at is set. Senders on every node claim the earliest due with
// FOR UPDATE SKIP LOCKED and move its due_at a lease ahead, so a delivery
// one node is sending is not sent by another until that lease runs out.

const webhookColumns = "id, project_id, url, events, secret, created_at"

func scanWebhook(row pgx.Row) (*store.Webhook, error) {
	var w store.Webhook
	if err := row.Scan(&w.ID, &w.ProjectID, &w.URL, &w.Events, &w.Secret, &w.CreatedAt); err != nil {
		return nil, notFound(err)
	}
	w.CreatedAt = w.CreatedAt.UTC()
	return &w, nil
}

// CreateWebhook registers url for a project's events and returns it with
// its signing secret.
func (s *Store) CreateWebhook(projectID, url string, events []string) (*store.Webhook, error) {
	ctx, cancel := opContext()
	defer cancel()
	w := store.NewWebhook(projectID, url, events, s.timestamp())
	_, err := s.pool.Exec(ctx, "INSERT INTO webhooks ("+webhookColumns+") VALUES ($1, $2, $3, $4, $5, $6)",
		w.ID, w.ProjectID, w.URL, w.Events, w.Secret, w.CreatedAt)
	if isForeignKeyViolation(err) {
		err = fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: create webhook: %w", err)
	}
	return w, nil
}

// Webhook returns a webhook by id.
func (s *Store) Webhook(id string) (*store.Webhook, error) {
	ctx, cancel := opContext()
	defer cancel()
	return scanWebhook(s.pool.QueryRow(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE id = $1", id))
}

// Webhooks lists a project's webhooks, oldest first.
func (s *Store) Webhooks(projectID string) ([]store.Webhook, error) {
	ctx, cancel := opContext()
	defer cancel()
	var exists bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1)", projectID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("store: list webhooks: %w", err)
	}
	if !exists {
		return nil, fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE project_id = $1 ORDER BY created_at, id", projectID)
	if err != nil {
		return nil, fmt.Errorf("store: list webhooks: %w", err)
	}
	var out []store.Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: list webhooks: %w", err)
		}
		out = append(out, *w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list webhooks: %w", err)
	}
	return out, nil
}

// DeleteWebhook removes a webhook and every delivery to it, sent or not.
func (s *Store) DeleteWebhook(id string) error {
	ctx, cancel := opContext()
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM webhooks WHERE id = $1", id) // deliveries cascade
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("store: delete webhook %s: %w", id, err)
	}
	return nil
}

// queueJobEvent queues the event of the job that tx has just ended, so
// that an ended job is never without its deliveries.
func (s *Store) queueJobEvent(ctx context.Context, tx pgx.Tx, jobID string, at time.Time) error {
	j, err := scanJob(tx.QueryRow(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = $1", jobID))
	if err != nil {
		return err
	}
	return s.queueEvent(ctx, tx, j.ProjectID, store.JobEvent(j, at))
}

// queueEvent creates the deliveries of ev (store.EventDeliveries) among
// the project's webhooks, due at ev.At.
func (s *Store) queueEvent(ctx context.Context, tx pgx.Tx, projectID string, ev store.Event) error {
	rows, err := tx.Query(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE project_id = $1 ORDER BY created_at, id",
		projectID)
	if err != nil {
		return err
	}
	hooks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Webhook, error) {
		w, err := scanWebhook(row)
		if err != nil {
			return store.Webhook{}, err
		}
		return *w, nil
	})
	if err != nil {
		return err
	}
	deliveries := store.EventDeliveries(hooks, ev)
	if len(deliveries) == 0 {
		return nil
	}
	event, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	for _, d := range deliveries {
		if _, err := tx.Exec(ctx, `INSERT INTO deliveries (id, webhook_id, event, status, created_at, due_at, queue_seq)
			VALUES ($1, $2, $3, $4, $5, $6, nextval('delivery_queue_seq'))`,
			d.ID, d.WebhookID, event, d.Status, d.CreatedAt, d.NextAttempt); err != nil {
			return err
		}
	}
	return nil
}

const deliveryColumns = `id, webhook_id, event, status, attempts, last_status, last_error, due_at,
	created_at, delivered_at, claimed_by`

func scanDelivery(row pgx.Row) (*store.Delivery, error) {
	var d store.Delivery
	var event []byte
	var due, delivered *time.Time
	var claimedBy *string
	err := row.Scan(&d.ID, &d.WebhookID, &event, &d.Status, &d.Attempts, &d.LastStatus, &d.LastError, &due,
		&d.CreatedAt, &delivered, &claimedBy)
	if err != nil {
		return nil, notFound(err)
	}
	if err := json.Unmarshal(event, &d.Event); err != nil {
		return nil, fmt.Errorf("decode event of delivery %s: %w", d.ID, err)
	}
	if due != nil {
		d.NextAttempt = due.UTC()
	}
	if delivered != nil {
		d.DeliveredAt = delivered.UTC()
	}
	d.CreatedAt = d.CreatedAt.UTC()
	d.Claimed = claimedBy != nil
	return &d, nil
}

// ClaimDelivery takes the next due delivery and its webhook, and moves it
// lease into the future, so that no other sender, on this node or another,
// takes it meanwhile, and a sender that dies mid-attempt leaves it to be
// tried again. Deliveries are claimed in the order they became due, so one
// job's events (and one webhook's) go out in order. Those of the webhooks
// in busyWebhooks, which the sender has one of in hand, and of the
// projects in busyProjects, which have as many attempts in hand as the
// sender gives a project, are passed over. It returns store.ErrNoDelivery
// when none is due.
//
// The passed-over rows are read past in the queue's index, so a busy
// project's backlog costs the claims of the others a scan of it, in the
// database, holding no lock but the claimed row's.
func (s *Store) ClaimDelivery(lease time.Duration, busyWebhooks, busyProjects []string) (*store.Delivery, *store.Webhook, error) {
	ctx, cancel := opContext()
	defer cancel()
	now := s.timestamp()
	// A nil list is NULL to PostgreSQL, and <> ALL(NULL) is never true.
	if busyWebhooks == nil {
		busyWebhooks = []string{}
	}
	if busyProjects == nil {
		busyProjects = []string{}
	}
	var d *store.Delivery
	var w *store.Webhook
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		d, err = scanDelivery(tx.QueryRow(ctx, `UPDATE deliveries
			SET claimed_by = $2, due_at = $3, queue_seq = nextval('delivery_queue_seq')
			WHERE id = (SELECT id FROM deliveries WHERE due_at <= $1 AND webhook_id <> ALL($4)
				AND webhook_id NOT IN (SELECT id FROM webhooks WHERE project_id = ANY($5))
				ORDER BY due_at, queue_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING `+deliveryColumns, now, s.node, now.Add(lease).Truncate(time.Microsecond), busyWebhooks, busyProjects))
		if errors.Is(err, store.ErrNotFound) {
			return store.ErrNoDelivery
		}
		if err != nil {
			return err
		}
		// The delivery's row lock holds off DeleteWebhook's cascade, so
		// its webhook is there.
		w, err = scanWebhook(tx.QueryRow(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE id = $1", d.WebhookID))
		return err
	})
	if errors.Is(err, store.ErrNoDelivery) {
		return nil, nil, store.ErrNoDelivery
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: claim delivery: %w", err)
	}
	return d, w, nil
}

// ReleaseDeliveries makes the deliveries this node had claimed when it
// stopped due now, and returns how many there were: their attempts may
// never have gone out. Outside a cluster (no node id) every claimed
// delivery was this process's, as on bbolt. A node of a cluster has a new
// id at every start, so it releases none: the deliveries a dead node held
// go out again when their leases run out, and the ones live nodes hold
// stay theirs.
func (s *Store) ReleaseDeliveries() (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET claimed_by = NULL, due_at = $2,
		queue_seq = nextval('delivery_queue_seq') WHERE claimed_by = $1`, s.node, s.timestamp())
	if err != nil {
		return 0, fmt.Errorf("store: release deliveries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// NextDeliveryDue returns when the earliest pending delivery is due, or
// false when none is pending (or the database cannot say: senders then
// sleep their longest and ask again).
func (s *Store) NextDeliveryDue() (time.Time, bool) {
	ctx, cancel := opContext()
	defer cancel()
	var next *time.Time
	if err := s.pool.QueryRow(ctx, "SELECT min(due_at) FROM deliveries WHERE due_at IS NOT NULL").Scan(&next); err != nil || next == nil {
		return time.Time{}, false
	}
	return next.UTC(), true
}

// DeliveryAttempted records how an attempt went: delivered (retryAt zero
// and errMsg empty), to be retried at retryAt, or given up on (retryAt
// zero, errMsg set).
func (s *Store) DeliveryAttempted(id string, status int, errMsg string, retryAt time.Time) error {
	ctx, cancel := opContext()
	defer cancel()
	var err error
	now := s.timestamp()
	switch {
	case !retryAt.IsZero():
		_, err = s.pool.Exec(ctx, `UPDATE deliveries SET attempts = attempts + 1, last_status = $2, last_error = $3,
			claimed_by = NULL, due_at = $4, queue_seq = nextval('delivery_queue_seq') WHERE id = $1`,
			id, status, errMsg, retryAt.UTC().Truncate(time.Microsecond))
	default:
		outcome, delivered := store.DeliveryOutcome(errMsg), &now
		if outcome != store.DeliveryDelivered {
			delivered = nil
		}
		_, err = s.pool.Exec(ctx, `UPDATE deliveries SET attempts = attempts + 1, last_status = $2, last_error = $3,
			claimed_by = NULL, due_at = NULL, queue_seq = NULL, status = $4, delivered_at = $5 WHERE id = $1`,
			id, status, errMsg, outcome, delivered)
	}
	// No row updated: its webhook was deleted meanwhile, which is no error.
	if err != nil {
		return fmt.Errorf("store: record delivery %s: %w", id, err)
	}
	return nil
}

// Deliveries returns a webhook's most recent deliveries, newest first, at
// most limit.
func (s *Store) Deliveries(webhookID string, limit int) ([]store.Delivery, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT "+deliveryColumns+` FROM deliveries WHERE webhook_id = $1
		ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2`, webhookID, max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("store: list deliveries: %w", err)
	}
	var out []store.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: list deliveries: %w", err)
		}
		out = append(out, *d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list deliveries: %w", err)
	}
	return out, nil
}
