package bolt

import (
	"bytes"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

func getDoc(tx *bbolt.Tx, id string) (*store.Document, error) {
	return get[store.Document](tx.Bucket(bucketDocuments), id)
}

func putDoc(tx *bbolt.Tx, d *store.Document) error { return put(tx.Bucket(bucketDocuments), d.ID, d) }

func getJob(tx *bbolt.Tx, id string) (*store.Job, error) {
	return get[store.Job](tx.Bucket(bucketJobs), id)
}

// putJob saves j, and keeps the running bucket listing exactly the jobs
// that are PROCESSING.
func putJob(tx *bbolt.Tx, j *store.Job) error {
	if err := put(tx.Bucket(bucketJobs), j.ID, j); err != nil {
		return err
	}
	running := tx.Bucket(bucketRunning)
	if j.Status == store.StatusProcessing {
		return running.Put([]byte(j.ID), nil)
	}
	return running.Delete([]byte(j.ID))
}

// CreateDocument stores a document's original bytes, records the document
// and queues the job that indexes it. It fills in the ids, hash, statuses and
// times of d and returns the job. A document that would take its project
// past limits (its documents, or their bytes) is ErrDocumentQuota or
// ErrStorageQuota, and leaves nothing behind.
//
// Uploads commit in groups (see update). A small original is written in
// the transaction (see files.go); a larger one is a file, durable before
// the transaction that refers to it commits. fileMu, held shared, makes the
// file write and the reference that keeps it one step as far as
// DeleteDocument and SweepFiles are concerned: otherwise a delete of
// another document with the same content, or the sweep, could remove the
// file between the two. A transaction that fails leaves the file with no
// reference; it is removed then, unless a document refers to it.
func (s *Store) CreateDocument(d *store.Document, o *store.Original, limits store.ProjectLimits) (*store.Job, error) {
	more := store.ProjectUsage{Documents: 1, StoredBytes: o.Size()}
	small := o.Size() <= inlineOriginalMax
	var data []byte // a small original, kept in its record
	if small {
		var err error
		if data, err = o.ReadAll(); err != nil {
			return nil, fmt.Errorf("store: create document: %w", err)
		}
	} else {
		// Refused before the file is written: an upload over a quota,
		// sent again and again, costs no disk.
		if err := s.CheckQuotas(d.ProjectID, limits, more); err != nil {
			return nil, fmt.Errorf("store: create document: %w", err)
		}
		s.fileMu.RLock()
		if err := s.putFile(d.OwnerID, o); err != nil {
			s.fileMu.RUnlock()
			return nil, fmt.Errorf("store: create document: %w", err)
		}
	}
	now := s.now().UTC()
	job := store.NewDocument(d, o, now)
	err := s.update(func(tx *bbolt.Tx) error {
		job.QueueKey, job.Ready = nil, false // from a run rolled back (see update)
		u := usageCounters(tx, d.ProjectID)
		if err := u.Check(limits, more); err != nil {
			return err
		}
		if err := addUsage(tx, d.ProjectID, more); err != nil {
			return err
		}
		if small {
			if err := putInline(tx, d, data); err != nil {
				return err
			}
		}
		if err := s.enqueue(tx, job, now); err != nil {
			return err
		}
		var err error
		if d.Seq, err = tx.Bucket(bucketDocuments).NextSequence(); err != nil {
			return err
		}
		if err := claimExternalID(tx, d); err != nil {
			return err
		}
		if err := putDoc(tx, d); err != nil {
			return err
		}
		if err := tx.Bucket(bucketOwnerDocs).Put(ownerKey(d.OwnerID, []byte(d.ID)), nil); err != nil {
			return err
		}
		if key := sessionDocKey(d); key != nil {
			if err := tx.Bucket(bucketSessionDocs).Put(key, nil); err != nil {
				return err
			}
		}
		if small {
			return nil // d's own, with no count (see files.go)
		}
		return addFileRef(tx, d.OwnerID, d.FileHash, 1)
	})
	if !small {
		s.fileMu.RUnlock()
		if err != nil {
			// Unless another document refers to it (the same content
			// uploaded before, or meanwhile), the file is an orphan.
			// Should the removal fail, SweepFiles takes it later.
			_ = s.removeOrphanFile(d.OwnerID, d.FileHash)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("store: create document: %w", err)
	}
	return job, nil
}

// Document returns a document by id.
func (s *Store) Document(id string) (*store.Document, error) {
	return record[store.Document](s, bucketDocuments, id)
}

// Documents lists an owner's documents newest first, a page of at most
// limit at a time: those after the document whose id is after ("" for the
// first page), and the id to give as after for the next page ("" when
// this one is the last). Newest first is in the order of their ids (see
// NewID), which is the order they were created in (to the millisecond
// across processes), so a document created or deleted between two pages
// neither repeats nor hides another.
func (s *Store) Documents(ownerID, after string, limit int) ([]store.Document, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("store: list documents: limit %d, want at least 1", limit)
	}
	var docs []store.Document
	next := ""
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := ownerKey(ownerID, nil)
		c := tx.Bucket(bucketOwnerDocs).Cursor()
		// Newest first: backwards from after, or from the owner's last key.
		var k []byte
		if after == "" {
			k, _ = c.Seek(append([]byte(ownerID), 1)) // the first key past the owner's
		} else {
			k, _ = c.Seek(ownerKey(ownerID, []byte(after)))
		}
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			if len(docs) == limit {
				next = docs[len(docs)-1].ID
				return nil
			}
			d, err := getDoc(tx, string(k[len(prefix):]))
			if err != nil {
				return err
			}
			docs = append(docs, *d)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: list documents: %w", err)
	}
	return docs, next, nil
}

// DeleteDocument removes a document, its chunks and vectors, and its job
// from the queue if it has not run, and frees its external id. It returns
// the chunk sequences removed (for the caller to drop from the index). The
// original file is removed once no document of the owner refers to it.
func (s *Store) DeleteDocument(id string) ([]uint64, error) {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	var removed []uint64
	var orphan string
	var owner string
	err := s.db.Update(func(tx *bbolt.Tx) error {
		d, err := getDoc(tx, id)
		if err != nil {
			return err
		}
		owner = d.OwnerID
		removed, orphan, err = s.removeDocument(tx, d, "the document was deleted before it was processed")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: delete document %s: %w", id, err)
	}
	if orphan != "" && s.pinned > 0 {
		s.orphansHeld = true // a backup is reading the files; swept when it ends
	} else if orphan != "" {
		if err := s.removeFile(owner, orphan); err != nil {
			// The records are gone; a leftover blob is swept at next start.
			return removed, fmt.Errorf("store: delete document %s: %w", id, err)
		}
	}
	return removed, nil
}

// removeDocument deletes d's record, chunks, vectors and subpages, frees
// its external id, and ends its job with reason if it has not run. It
// returns the chunk sequences removed and, when d was the last reference
// to its original file, the file's hash, for the caller to remove once
// the transaction has committed.
func (s *Store) removeDocument(tx *bbolt.Tx, d *store.Document, reason string) (removed []uint64, orphan string, err error) {
	if removed, err = deleteChunks(tx, d); err != nil {
		return nil, "", err
	}
	if err := s.dropSubpagesOf(tx, d); err != nil {
		return nil, "", err
	}
	if err := tx.Bucket(bucketDocuments).Delete([]byte(d.ID)); err != nil {
		return nil, "", err
	}
	// Its room in its project's quotas comes back at once, its file's
	// bytes too, whether or not another document keeps the file.
	if err := addUsage(tx, d.ProjectID, store.ProjectUsage{Documents: -1, StoredBytes: -d.Size}); err != nil {
		return nil, "", err
	}
	if err := tx.Bucket(bucketOwnerDocs).Delete(ownerKey(d.OwnerID, []byte(d.ID))); err != nil {
		return nil, "", err
	}
	if key := sessionDocKey(d); key != nil {
		if err := tx.Bucket(bucketSessionDocs).Delete(key); err != nil {
			return nil, "", err
		}
	}
	if err := releaseExternalID(tx, d); err != nil {
		return nil, "", err
	}
	if err := s.cancelJob(tx, d.JobID, reason); err != nil {
		return nil, "", err
	}
	if inlineOf(tx, d) != nil {
		if err := tx.Bucket(bucketOriginals).Delete(ownerKey(d.OwnerID, []byte(d.ID))); err != nil {
			return nil, "", err
		}
		return removed, "", nil
	}
	if err := addFileRef(tx, d.OwnerID, d.FileHash, -1); err != nil {
		return nil, "", err
	}
	if fileRefs(tx, d.OwnerID, d.FileHash) == 0 {
		if inline(tx, d.OwnerID, d.FileHash) == nil {
			orphan = d.FileHash
		} else if err := tx.Bucket(bucketOriginals).Delete(ownerKey(d.OwnerID, []byte(d.FileHash))); err != nil {
			return nil, "", err
		}
	}
	return removed, orphan, nil
}

// cancelJob takes a removed document's job out of the queue, ending it
// with reason. A job already running notices the document is gone when it
// commits.
func (s *Store) cancelJob(tx *bbolt.Tx, jobID, reason string) error {
	j, err := getJob(tx, jobID)
	if err != nil {
		return err
	}
	if j.Status != store.StatusPending {
		return nil
	}
	if err := unqueue(tx, j); err != nil {
		return err
	}
	j.Status, j.Error, j.UpdatedAt = store.StatusFailed, reason, s.now().UTC()
	return putJob(tx, j)
}

// DocumentsOf returns the document of every chunk, by document id, read in
// one transaction. A document deleted meanwhile has no entry.
func (s *Store) DocumentsOf(chunks []store.Chunk) (map[string]*store.Document, error) {
	docs := make(map[string]*store.Document)
	err := s.db.View(func(tx *bbolt.Tx) error {
		for _, c := range chunks {
			if _, done := docs[c.DocumentID]; done {
				continue
			}
			d, err := getDoc(tx, c.DocumentID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			docs[c.DocumentID] = d
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read documents of chunks: %w", err)
	}
	return docs, nil
}
