package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// enqueue adds a PENDING job to the queue, due at due, and saves it: to
// the fair queue (fairqueue.go) when it is due already, else to the
// waiting queue, keyed by due time then arrival, whose first entry is the
// next to come due however many jobs wait out a back-off.
func (s *Store) enqueue(tx *bbolt.Tx, j *store.Job, due time.Time) error {
	if err := unqueue(tx, j); err != nil { // a job is queued once
		return err
	}
	if !due.After(s.now()) {
		if err := makeReady(tx, j); err != nil {
			return err
		}
		return putJob(tx, j)
	}
	q := tx.Bucket(bucketQueue)
	seq, err := q.NextSequence()
	if err != nil {
		return err
	}
	j.QueueKey = append(u64(uint64(max(due.UnixNano(), 0))), u64(seq)...)
	if err := q.Put(j.QueueKey, []byte(j.ID)); err != nil {
		return err
	}
	return putJob(tx, j)
}

// dueOf is the due time in a queue key.
func dueOf(key []byte) time.Time { return time.Unix(0, int64(fromU64(key[:8]))) }

// Job returns a job by id.
func (s *Store) Job(id string) (*store.Job, error) {
	return record[store.Job](s, bucketJobs, id)
}

// ClaimJob takes the next due job in the fair queue's order (see
// fairqueue.go) whose project is not in skip, marks it PROCESSING and
// returns it with its document. It returns ErrNoJob when none is due.
func (s *Store) ClaimJob(skip []string) (*store.Job, *store.Document, error) {
	jobs, docs, err := s.ClaimJobs(1, nil, skip)
	if err != nil {
		return nil, nil, err
	}
	return jobs[0], docs[0], nil
}

// ClaimJobs is ClaimJob for up to n jobs in one transaction: it takes the
// next due job, then, while the next one's document passes also, that one
// too. A worker claiming job after job waits for one commit each,
// a few hundred a second whatever the machine; small documents that run
// beside the worker (see ingest) are claimed together instead. Jobs that
// also refuses stay queued; a nil also refuses none. It returns ErrNoJob
// when none is due.
func (s *Store) ClaimJobs(n int, also func(*store.Document) bool, skip []string) ([]*store.Job, []*store.Document, error) {
	now := s.now().UTC()
	// Idle workers ask often: a read answers them without a commit.
	if due, ok := s.NextDue(); !ok || due.After(now) {
		return nil, nil, store.ErrNoJob
	}
	skipped := make(map[string]bool, len(skip))
	for _, p := range skip {
		skipped[p] = true
	}
	var jobs []*store.Job
	var docs []*store.Document
	err := s.update(func(tx *bbolt.Tx) error {
		jobs, docs = jobs[:0], docs[:0] // from a run rolled back (see update)
		if err := promoteDue(tx, now); err != nil {
			return err
		}
		var only func(*store.Document) bool // the first job is claimed whatever its document
		for len(jobs) < n {
			job, doc, err := claimNext(tx, now, only, skipped)
			only = also
			if err != nil || job == nil {
				return err
			}
			jobs, docs = append(jobs, job), append(docs, doc)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: claim job: %w", err)
	}
	if len(jobs) == 0 {
		return nil, nil, store.ErrNoJob
	}
	return jobs, docs, nil
}

// claimNext claims the fair queue's next job in tx, or returns none when
// no job outside skip is due, or when only is not nil and refuses the
// job's document.
func claimNext(tx *bbolt.Tx, now time.Time, only func(*store.Document) bool, skip map[string]bool) (*store.Job, *store.Document, error) {
	for {
		project, ptag, owner, otag, key, id, err := nextReady(tx, skip)
		if err != nil || key == nil {
			return nil, nil, err // no job: not an error, which would fail the group
		}
		// An entry whose job or document is gone would otherwise head
		// its owner's jobs for ever: drop it and go on.
		j, err := getJob(tx, string(id))
		if errors.Is(err, store.ErrNotFound) {
			if err := tx.Bucket(bucketReadyJobs).Delete(key); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("queued job %s: %w", id, err)
		}
		doc, err := getDoc(tx, j.DocumentID)
		if errors.Is(err, store.ErrNotFound) {
			if err := unqueue(tx, j); err != nil {
				return nil, nil, err
			}
			j.Status, j.Error, j.UpdatedAt = store.StatusFailed, "the document was deleted before it was processed", now
			if err := putJob(tx, j); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document of job %s: %w", j.ID, err)
		}
		if only != nil && !only(doc) {
			return nil, nil, nil
		}
		if err := unqueue(tx, j); err != nil {
			return nil, nil, err
		}
		if err := tookTurn(tx, project, ptag, owner, otag); err != nil {
			return nil, nil, err
		}
		j.Status, j.Attempts, j.UpdatedAt, j.StartedAt, j.Progress = store.StatusProcessing, j.Attempts+1, now, now, nil
		doc.Status, doc.UpdatedAt = store.StatusProcessing, now
		if err := putDoc(tx, doc); err != nil {
			return nil, nil, err
		}
		return j, doc, putJob(tx, j)
	}
}

// NextDue returns when the earliest queued job becomes due, or false when
// the queue is empty (the zero time when one is due already). Workers
// sleep until then.
func (s *Store) NextDue() (time.Time, bool) {
	var next time.Time
	var found bool
	_ = s.db.View(func(tx *bbolt.Tx) error {
		if k, _ := tx.Bucket(bucketReadyJobs).Cursor().First(); k != nil {
			found = true // due already: the zero time

			return nil
		}
		if k, _ := tx.Bucket(bucketQueue).Cursor().First(); k != nil {
			next, found = dueOf(k), true
		}
		return nil
	})
	return next, found
}

// FinishJob ends a job as SUCCEEDED (errMsg empty) or FAILED, and its
// document with it, and queues the event for the project's webhooks in the
// same transaction: an ended job is never without its deliveries.
func (s *Store) FinishJob(jobID string, chunks, pages int, errMsg string) error {
	status := store.JobOutcome(errMsg)
	return s.updateJob(jobID, func(tx *bbolt.Tx, j *store.Job, d *store.Document) error {
		if err := chargeRun(tx, j, s.now()); err != nil {
			return err
		}
		j.Status, j.Error, j.Chunks, j.ChunksEmbedded, j.Progress = status, errMsg, chunks, chunks, nil
		if d != nil {
			d.Status, d.Error, d.Chunks, d.Pages = status, errMsg, chunks, pages
		}
		return s.queueEvent(tx, j.ProjectID, store.JobEvent(j, s.now().UTC()))
	})
}

// setJobChunks records in a document's job how many chunks it has written
// and how many of them have vectors, in the transaction that wrote them.
func setJobChunks(tx *bbolt.Tx, jobID string, chunks, embedded int, now time.Time) error {
	j, err := getJob(tx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	j.Chunks, j.ChunksEmbedded = chunks, embedded
	if j.SearchableAt.IsZero() {
		j.SearchableAt = now
	}
	return putJob(tx, j)
}

// SetJobProgress records how far a running job has got. It changes only a
// PROCESSING job: a report that arrives after the job ended, or from an
// attempt that was interrupted, is dropped (and reported as ErrNotFound
// when the job is gone). Callers write it every few seconds at most: each
// call waits for a commit with an fsync.
func (s *Store) SetJobProgress(jobID string, p store.JobProgress) error {
	err := s.update(func(tx *bbolt.Tx) error {
		j, err := getJob(tx, jobID)
		if err != nil {
			return err
		}
		if j.Status != store.StatusProcessing {
			return nil
		}
		j.Progress, j.UpdatedAt = &p, s.now().UTC()
		return putJob(tx, j)
	})
	if err != nil {
		return fmt.Errorf("store: record progress of job %s: %w", jobID, err)
	}
	return nil
}

// RetryJob puts a job back in the queue, due at notBefore, keeping errMsg as
// the reason it waits.
func (s *Store) RetryJob(jobID string, notBefore time.Time, errMsg string) error {
	return s.update(func(tx *bbolt.Tx) error {
		j, err := getJob(tx, jobID)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		if j.Status == store.StatusProcessing {
			if err := chargeRun(tx, j, now); err != nil {
				return err
			}
		}
		j.Status, j.Error, j.NotBefore, j.UpdatedAt, j.Progress = store.StatusPending, errMsg, notBefore.UTC(), now, nil
		if d, err := getDoc(tx, j.DocumentID); err == nil {
			d.Status, d.Error, d.UpdatedAt = store.StatusPending, errMsg, now
			if err := putDoc(tx, d); err != nil {
				return err
			}
		}
		return s.enqueue(tx, j, j.NotBefore)
	})
}

// RequeueInterrupted returns the jobs that were PROCESSING when the process
// stopped to PENDING, counting the interruption against each: a document
// that crashes the server (or makes the OOM killer end it) would otherwise
// be taken up again at every start and crash it again. A job interrupted
// maxInterrupted times FAILs instead, its chunks removed, in the same
// transaction, and is never claimed again. It returns how many jobs were
// requeued and the jobs that failed. They are listed in the running
// bucket (see putJob): every document ever uploaded has a job, and
// reading them all took most of a second at a million documents.
func (s *Store) RequeueInterrupted(maxInterrupted int) (int, []*store.Job, error) {
	var ids []string
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketRunning).ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: requeue interrupted jobs: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil, nil
	}
	n := 0
	var failed []*store.Job
	err = s.db.Update(func(tx *bbolt.Tx) error {
		n, failed = 0, failed[:0]
		now := s.now().UTC()
		for _, id := range ids {
			j, err := getJob(tx, id)
			if err != nil {
				return err
			}
			if j.Status != store.StatusProcessing {
				continue
			}
			j.Interrupted++
			j.UpdatedAt, j.Progress = now, nil
			d, err := getDoc(tx, j.DocumentID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if j.AfterInterruption(maxInterrupted) {
				if err := s.failInterrupted(tx, j, d, now); err != nil {
					return err
				}
				failed = append(failed, j)
				continue
			}
			if d != nil {
				d.Status = store.StatusPending
				if err := putDoc(tx, d); err != nil {
					return err
				}
			}
			if err := s.enqueue(tx, j, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: requeue interrupted jobs: %w", err)
	}
	return n, failed, nil
}

// failInterrupted saves j, failed for being interrupted too often
// (Job.AfterInterruption), with its document (nil when deleted), without
// the chunks its runs wrote, and queues its event for the project's
// webhooks.
func (s *Store) failInterrupted(tx *bbolt.Tx, j *store.Job, d *store.Document, now time.Time) error {
	if d != nil {
		if _, err := deleteChunks(tx, d); err != nil {
			return err
		}
		d.Status, d.Error, d.Chunks, d.UpdatedAt = store.StatusFailed, j.Error, 0, now
		if err := putDoc(tx, d); err != nil {
			return err
		}
	}
	if err := putJob(tx, j); err != nil {
		return err
	}
	return s.queueEvent(tx, j.ProjectID, store.JobEvent(j, now))
}

// listRunning fills the running bucket from the jobs: the upgrade of a
// file of schema 2 or older. Only a record holding the PROCESSING status
// field is decoded (JSON escapes the quotes of any string that might hold
// the same text).
func listRunning(tx *bbolt.Tx) error {
	processing := []byte(`"status":"` + store.StatusProcessing + `"`)
	running := tx.Bucket(bucketRunning)
	return tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
		if !bytes.Contains(v, processing) {
			return nil
		}
		var j store.Job
		if err := decode(v, &j); err != nil {
			return fmt.Errorf("%w (job %s)", err, k)
		}
		if j.Status != store.StatusProcessing {
			return nil
		}
		return running.Put(k, nil)
	})
}

// updateJob applies fn to a job and its document (nil when deleted) and
// saves both in one transaction.
func (s *Store) updateJob(jobID string, fn func(*bbolt.Tx, *store.Job, *store.Document) error) error {
	err := s.update(func(tx *bbolt.Tx) error {
		j, err := getJob(tx, jobID)
		if err != nil {
			return err
		}
		d, err := getDoc(tx, j.DocumentID)
		if errors.Is(err, store.ErrNotFound) {
			d = nil
		} else if err != nil {
			return err
		}
		if err := fn(tx, j, d); err != nil {
			return err
		}
		now := s.now().UTC()
		j.UpdatedAt = now
		if d != nil {
			d.UpdatedAt = now
			if err := putDoc(tx, d); err != nil {
				return err
			}
		}
		return putJob(tx, j)
	})
	if err != nil {
		return fmt.Errorf("store: update job %s: %w", jobID, err)
	}
	return nil
}

// PendingJobs returns how many jobs wait in the queue, due or backing off,
// and when the oldest of them was created (zero when none waits).
func (s *Store) PendingJobs() (n int, oldest time.Time, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		jobs := tx.Bucket(bucketJobs)
		for _, q := range [][]byte{bucketReadyJobs, bucketQueue} {
			err := tx.Bucket(q).ForEach(func(_, id []byte) error {
				j, err := get[store.Job](jobs, string(id))
				if errors.Is(err, store.ErrNotFound) {
					return nil // a claim drops its entry
				}
				if err != nil {
					return err
				}
				n++
				if oldest.IsZero() || j.CreatedAt.Before(oldest) {
					oldest = j.CreatedAt
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return n, oldest, err
}
