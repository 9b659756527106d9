package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// CreateWebhook registers url for a project's events and returns it with
// its signing secret.
func (s *Store) CreateWebhook(projectID, url string, events []string) (*store.Webhook, error) {
	w := store.NewWebhook(projectID, url, events, s.now())
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketProjects).Get([]byte(projectID)) == nil {
			return fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
		}
		return put(tx.Bucket(bucketWebhooks), w.ID, w)
	})
	if err != nil {
		return nil, fmt.Errorf("store: create webhook: %w", err)
	}
	return w, nil
}

// Webhook returns a webhook by id.
func (s *Store) Webhook(id string) (*store.Webhook, error) {
	return record[store.Webhook](s, bucketWebhooks, id)
}

// Webhooks lists a project's webhooks, oldest first.
func (s *Store) Webhooks(projectID string) ([]store.Webhook, error) {
	var out []store.Webhook
	err := s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketProjects).Get([]byte(projectID)) == nil {
			return fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
		}
		out = projectWebhooks(tx, projectID)
		return nil
	})
	return out, err
}

func projectWebhooks(tx *bbolt.Tx, projectID string) []store.Webhook {
	var out []store.Webhook
	_ = tx.Bucket(bucketWebhooks).ForEach(func(_, v []byte) error {
		var w store.Webhook
		if decode(v, &w) == nil && w.ProjectID == projectID {
			out = append(out, w)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b store.Webhook) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// DeleteWebhook removes a webhook and every delivery to it, sent or not.
func (s *Store) DeleteWebhook(id string) error {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		w, err := get[store.Webhook](tx.Bucket(bucketWebhooks), id)
		if err != nil {
			return err
		}
		prefix := ownerKey(id, nil)
		log, deliveries := tx.Bucket(bucketWebhookLog), tx.Bucket(bucketDeliveries)
		var keys [][]byte
		c := log.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			dID := k[len(prefix)+8:]
			if d, err := get[store.Delivery](deliveries, string(dID)); err == nil {
				if err := unqueueDelivery(tx, w.ProjectID, d); err != nil {
					return err
				}
			}
			if err := deliveries.Delete(dID); err != nil {
				return err
			}
			if err := log.Delete(k); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketWebhooks).Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("store: delete webhook %s: %w", id, err)
	}
	return nil
}

// queueEvent creates the deliveries of ev (EventDeliveries) among the
// project's webhooks, due at ev.At.
func (s *Store) queueEvent(tx *bbolt.Tx, projectID string, ev store.Event) error {
	for _, d := range store.EventDeliveries(projectWebhooks(tx, projectID), ev) {
		if err := s.scheduleDelivery(tx, projectID, &d, ev.At); err != nil {
			return err
		}
		logKey := ownerKey(d.WebhookID, append(u64(uint64(ev.At.UnixNano())), d.ID...))
		if err := tx.Bucket(bucketWebhookLog).Put(logKey, nil); err != nil {
			return err
		}
	}
	return nil
}

// scheduleDelivery (re)queues d, a delivery to a webhook of projectID, in
// the outbox, due at due, and saves it. The outbox is keyed by due time
// then arrival, like the job queue; the project outbox holds the same keys
// under the project's id, for ClaimDelivery.
func (s *Store) scheduleDelivery(tx *bbolt.Tx, projectID string, d *store.Delivery, due time.Time) error {
	if err := unqueueDelivery(tx, projectID, d); err != nil {
		return err
	}
	out := tx.Bucket(bucketOutbox)
	seq, err := out.NextSequence()
	if err != nil {
		return err
	}
	d.QueueKey = append(u64(uint64(max(due.UnixNano(), 0))), u64(seq)...)
	d.NextAttempt = due.UTC()
	if err := out.Put(d.QueueKey, []byte(d.ID)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketProjectOutbox).Put(ownerKey(projectID, d.QueueKey), ownerKey(d.WebhookID, []byte(d.ID))); err != nil {
		return err
	}
	return put(tx.Bucket(bucketDeliveries), d.ID, d)
}

// unqueueDelivery takes d, a delivery to a webhook of projectID, out of
// the outboxes, if it is in them; the caller saves d.
func unqueueDelivery(tx *bbolt.Tx, projectID string, d *store.Delivery) error {
	if d.QueueKey == nil {
		return nil
	}
	if err := tx.Bucket(bucketOutbox).Delete(d.QueueKey); err != nil {
		return err
	}
	return tx.Bucket(bucketProjectOutbox).Delete(ownerKey(projectID, d.QueueKey))
}

// webhookProject is the project of a webhook.
func webhookProject(tx *bbolt.Tx, webhookID string) (string, error) {
	w, err := get[store.Webhook](tx.Bucket(bucketWebhooks), webhookID)
	if err != nil {
		return "", err
	}
	return w.ProjectID, nil
}

// indexProjectOutboxes fills the project outbox from the outbox, for a
// file of schema 6 or older, which had none. An entry whose delivery or
// webhook is gone could never be sent: it is dropped, not left to stop
// the start.
func indexProjectOutboxes(tx *bbolt.Tx) error {
	outbox, index := tx.Bucket(bucketOutbox), tx.Bucket(bucketProjectOutbox)
	var orphans [][]byte
	err := outbox.ForEach(func(k, id []byte) error {
		d, err := get[store.Delivery](tx.Bucket(bucketDeliveries), string(id))
		if errors.Is(err, store.ErrNotFound) {
			orphans = append(orphans, bytes.Clone(k))
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w (delivery %s)", err, id)
		}
		project, err := webhookProject(tx, d.WebhookID)
		if errors.Is(err, store.ErrNotFound) {
			orphans = append(orphans, bytes.Clone(k))
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w (webhook %s)", err, d.WebhookID)
		}
		return index.Put(ownerKey(project, k), ownerKey(d.WebhookID, id))
	})
	if err != nil {
		return err
	}
	for _, k := range orphans {
		if err := outbox.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// maxBusySkipped bounds the due deliveries of a project's busy webhooks
// one ClaimDelivery reads past: past them the project's other webhooks
// wait for its attempts to end, which costs that project alone.
const maxBusySkipped = 1000

// ClaimDelivery takes the next due delivery and its webhook, and moves it
// lease into the future, so that no other sender takes it meanwhile and a
// sender that dies mid-attempt leaves it to be tried again. Deliveries are
// claimed in the order they became due, so one job's events (and one
// webhook's) go out in order. Those of the webhooks in busyWebhooks (the
// sender has one of theirs in hand) and of the projects in busyProjects
// (the sender has as many of theirs in hand as it gives a project) are
// passed over: one slow endpoint's backlog, or one project's, must not
// hold up the others', nor get more attempts at once.
//
// The claim reads each project's outbox from its start, stepping over a
// busy project at once: its backlog, however long, costs the other
// projects one seek, where a walk of the whole outbox in due order would
// read all of it before their deliveries.
func (s *Store) ClaimDelivery(lease time.Duration, busyWebhooks, busyProjects []string) (*store.Delivery, *store.Webhook, error) {
	var d *store.Delivery
	var w *store.Webhook
	now := s.now().UTC()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		id := nextDelivery(tx.Bucket(bucketProjectOutbox), now, busyWebhooks, busyProjects)
		if id == nil {
			return store.ErrNoDelivery
		}
		var err error
		if d, err = get[store.Delivery](tx.Bucket(bucketDeliveries), string(id)); err != nil {
			return err
		}
		if w, err = get[store.Webhook](tx.Bucket(bucketWebhooks), d.WebhookID); err != nil {
			return err
		}
		d.Claimed = true
		return s.scheduleDelivery(tx, w.ProjectID, d, now.Add(lease))
	})
	if err != nil {
		return nil, nil, err
	}
	return d, w, nil
}

// nextDelivery returns the id of the earliest delivery due at now in the
// project outbox po that is of no busy webhook or project, or nil.
func nextDelivery(po *bbolt.Bucket, now time.Time, busyWebhooks, busyProjects []string) []byte {
	var bestKey, bestID []byte // outbox key and delivery id of the earliest so far
	c := po.Cursor()
	for k, v := c.First(); k != nil; {
		project := k[:bytes.IndexByte(k, 0)]
		prefix := k[:len(project)+1]
		if !slices.Contains(busyProjects, string(project)) {
			for skipped := 0; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				queueKey := k[len(prefix):]
				if dueOf(queueKey).After(now) || (bestKey != nil && bytes.Compare(queueKey, bestKey) >= 0) {
					break // none of this project's is due, or earlier than the best
				}
				webhook, id, _ := bytes.Cut(v, []byte{0})
				if !slices.Contains(busyWebhooks, string(webhook)) {
					bestKey, bestID = bytes.Clone(queueKey), bytes.Clone(id)
					break
				}
				if skipped++; skipped == maxBusySkipped {
					break
				}
			}
		}
		k, v = c.Seek(append(bytes.Clone(project), 1)) // past this project's keys
	}
	return bestID
}

// ReleaseDeliveries makes the deliveries a sender had claimed when the
// process stopped due now: bbolt admits one process, so at start no sender
// holds any, and their attempts may never have gone out.
func (s *Store) ReleaseDeliveries() (int, error) {
	n := 0
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var claimed []*store.Delivery
		err := tx.Bucket(bucketOutbox).ForEach(func(_, id []byte) error {
			d, err := get[store.Delivery](tx.Bucket(bucketDeliveries), string(id))
			if err != nil {
				return err
			}
			if d.Claimed {
				claimed = append(claimed, d)
			}
			return nil
		})
		if err != nil {
			return err
		}
		now := s.now().UTC()
		for _, d := range claimed {
			project, err := webhookProject(tx, d.WebhookID)
			if err != nil {
				return err
			}
			d.Claimed = false
			if err := s.scheduleDelivery(tx, project, d, now); err != nil {
				return err
			}
		}
		n = len(claimed)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: release deliveries: %w", err)
	}
	return n, nil
}

// NextDeliveryDue returns when the earliest pending delivery is due.
func (s *Store) NextDeliveryDue() (time.Time, bool) {
	var next time.Time
	var found bool
	_ = s.db.View(func(tx *bbolt.Tx) error {
		if k, _ := tx.Bucket(bucketOutbox).Cursor().First(); k != nil {
			next, found = dueOf(k), true
		}
		return nil
	})
	return next, found
}

// DeliveryAttempted records how an attempt went: delivered (retryAt zero
// and errMsg empty), to be retried at retryAt, or given up on (retryAt
// zero, errMsg set).
func (s *Store) DeliveryAttempted(id string, status int, errMsg string, retryAt time.Time) error {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		d, err := get[store.Delivery](tx.Bucket(bucketDeliveries), id)
		if err != nil {
			return err
		}
		project, err := webhookProject(tx, d.WebhookID)
		if err != nil {
			return err
		}
		d.Attempts++
		d.LastStatus, d.LastError, d.Claimed = status, errMsg, false
		if !retryAt.IsZero() {
			return s.scheduleDelivery(tx, project, d, retryAt)
		}
		if err := unqueueDelivery(tx, project, d); err != nil {
			return err
		}
		d.QueueKey, d.NextAttempt = nil, time.Time{}
		if d.Status = store.DeliveryOutcome(errMsg); d.Status == store.DeliveryDelivered {
			d.DeliveredAt = s.now().UTC()
		}
		return put(tx.Bucket(bucketDeliveries), d.ID, d)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil // its webhook was deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("store: record delivery %s: %w", id, err)
	}
	return nil
}

// Deliveries returns a webhook's most recent deliveries, newest first, at
// most limit.
func (s *Store) Deliveries(webhookID string, limit int) ([]store.Delivery, error) {
	var out []store.Delivery
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := ownerKey(webhookID, nil)
		c := tx.Bucket(bucketWebhookLog).Cursor()
		// Seek past the prefix's last key, then walk back.
		k, _ := c.Seek(ownerKey(webhookID, bytes.Repeat([]byte{0xff}, 9)))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
			d, err := get[store.Delivery](tx.Bucket(bucketDeliveries), string(k[len(prefix)+8:]))
			if err != nil {
				return err
			}
			out = append(out, *d)
		}
		return nil
	})
	return out, err
}
