package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// filePiece is the size of the pieces an original is stored in: rows of a
// size PostgreSQL moves and replicates comfortably.
const filePiece = 1 << 20

const docColumns = `id, seq, project_id, owner_id, name, metadata, format, file_hash, size, pages,
	job_id, status, error, chunks, created_at, updated_at, external_id`

func scanDoc(row pgx.Row) (*store.Document, error) {
	var d store.Document
	var seq int64
	var metadata []byte
	err := row.Scan(&d.ID, &seq, &d.ProjectID, &d.OwnerID, &d.Name, &metadata, &d.Format, &d.FileHash,
		&d.Size, &d.Pages, &d.JobID, &d.Status, &d.Error, &d.Chunks, &d.CreatedAt, &d.UpdatedAt, &d.ExternalID)
	if err != nil {
		return nil, notFound(err)
	}
	if metadata != nil {
		if err := json.Unmarshal(metadata, &d.Metadata); err != nil {
			return nil, fmt.Errorf("decode metadata of document %s: %w", d.ID, err)
		}
	}
	d.Seq = uint64(seq)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return &d, nil
}

// CreateDocument stores a document's original bytes, records the document
// and queues the job that indexes it, all in one transaction. It fills in
// the ids, hash, statuses and times of d and returns the job. A document
// that would take its project past limits is store.ErrDocumentQuota or
// store.ErrStorageQuota, and writes nothing.
func (s *Store) CreateDocument(d *store.Document, o *store.Original, limits store.ProjectLimits) (*store.Job, error) {
	ctx, cancel := opContext()
	defer cancel()
	more := store.ProjectUsage{Documents: 1, StoredBytes: o.Size()}
	// Refused before its pieces are sent: the transaction checks again.
	if err := s.checkQuotas(ctx, d.ProjectID, limits, more); err != nil {
		return nil, fmt.Errorf("store: create document: %w", err)
	}
	now := s.timestamp()
	job := store.NewDocument(d, o, now)
	var metadata []byte // NULL for none, as the bbolt store omits it
	if len(d.Metadata) > 0 {
		var err error
		if metadata, err = json.Marshal(d.Metadata); err != nil {
			return nil, fmt.Errorf("store: create document: encode metadata: %w", err)
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := addFile(ctx, tx, d.OwnerID, d.FileHash, o); err != nil {
			return err
		}
		var seq int64
		err := tx.QueryRow(ctx, `INSERT INTO documents (id, project_id, owner_id, name, metadata, format,
			file_hash, size, job_id, status, created_at, updated_at, external_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12) RETURNING seq`,
			d.ID, d.ProjectID, d.OwnerID, d.Name, metadata, d.Format, d.FileHash, d.Size, d.JobID,
			d.Status, now, d.ExternalID).Scan(&seq)
		if err != nil {
			return err
		}
		d.Seq = uint64(seq)
		if d.ExternalID != "" { // a free external id is taken at once
			if _, err := tx.Exec(ctx, `INSERT INTO external_ids (owner_id, external_id, document_id)
				VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, d.OwnerID, d.ExternalID, d.ID); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO jobs (id, project_id, owner_id, document_id, status,
			created_at, updated_at, due_at, queue_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $6, $6, nextval('job_queue_seq'))`,
			job.ID, job.ProjectID, job.OwnerID, job.DocumentID, job.Status, now)
		if err != nil {
			return err
		}
		if err := s.notifyJob(ctx, tx, job.ID, job.OwnerID); err != nil {
			return err
		}
		return addUsageWithin(ctx, tx, d.ProjectID, limits, more)
	})
	if err != nil {
		return nil, fmt.Errorf("store: create document: %w", err)
	}
	return job, nil
}

// addFile counts one more reference to an owner's file, writing its bytes
// when it is new. The upsert locks the file's row, so of two uploads of
// one content the second waits for the first and finds its bytes.
func addFile(ctx context.Context, tx pgx.Tx, ownerID, hash string, o *store.Original) error {
	var refs int
	if err := tx.QueryRow(ctx, `INSERT INTO files (owner_id, hash, refs) VALUES ($1, $2, 1)
		ON CONFLICT (owner_id, hash) DO UPDATE SET refs = files.refs + 1 RETURNING refs`,
		ownerID, hash).Scan(&refs); err != nil {
		return fmt.Errorf("reference file: %w", err)
	}
	if refs > 1 {
		return nil
	}
	// Read a piece at a time: a spooled upload is never all in memory.
	piece := make([]byte, filePiece)
	for n := 0; n == 0 || int64(n)*filePiece < o.Size(); n++ {
		k, err := o.ReadAt(piece[:min(filePiece, o.Size()-int64(n)*filePiece)], int64(n)*filePiece)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the upload: %w", err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO file_pieces (owner_id, hash, n, data) VALUES ($1, $2, $3, $4)",
			ownerID, hash, n, piece[:k]); err != nil {
			return fmt.Errorf("write file: %w", err)
		}
	}
	return nil
}

// releaseFile drops one reference to an owner's file, and the file with
// its last reference.
func releaseFile(ctx context.Context, tx pgx.Tx, ownerID, hash string) error {
	var refs int
	err := tx.QueryRow(ctx, "UPDATE files SET refs = refs - 1 WHERE owner_id = $1 AND hash = $2 RETURNING refs",
		ownerID, hash).Scan(&refs)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release file: %w", err)
	}
	if refs <= 0 {
		_, err = tx.Exec(ctx, "DELETE FROM files WHERE owner_id = $1 AND hash = $2", ownerID, hash)
	}
	return err
}

// ReadOriginal returns the original bytes of document d, kept here once
// per owner and content and counted in files.
func (s *Store) ReadOriginal(d *store.Document) ([]byte, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT data FROM file_pieces WHERE owner_id = $1 AND hash = $2 ORDER BY n",
		d.OwnerID, d.FileHash)
	if err != nil {
		return nil, fmt.Errorf("store: read the original of %s: %w", d.ID, err)
	}
	pieces, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("store: read the original of %s: %w", d.ID, err)
	}
	if len(pieces) == 0 {
		return nil, fmt.Errorf("store: read the original of %s: %w", d.ID, store.ErrNotFound)
	}
	data := []byte{}
	for _, p := range pieces {
		data = append(data, p...)
	}
	return data, nil
}

// OpenOriginal returns document d's original to read. Its pieces are read
// into memory (a file's size at most): a node's data dir holds no copy.
func (s *Store) OpenOriginal(d *store.Document) (*store.Original, error) {
	data, err := s.ReadOriginal(d)
	if err != nil {
		return nil, err
	}
	return store.Bytes(data), nil
}

// Document returns a document by id.
func (s *Store) Document(id string) (*store.Document, error) {
	ctx, cancel := opContext()
	defer cancel()
	return scanDoc(s.pool.QueryRow(ctx, "SELECT "+docColumns+" FROM documents WHERE id = $1", id))
}

// Documents lists an owner's documents newest first, a page at a time
// (see bolt.Store.Documents): in the order of their ids, compared byte by
// byte.
func (s *Store) Documents(ownerID, after string, limit int) ([]store.Document, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("store: list documents: limit %d, want at least 1", limit)
	}
	ctx, cancel := opContext()
	defer cancel()
	// One more than the page, to know whether another follows.
	docs, err := s.queryDocs(ctx, "SELECT "+docColumns+` FROM documents
		WHERE owner_id = $1 AND ($2 = '' OR id COLLATE "C" < $2)
		ORDER BY id COLLATE "C" DESC LIMIT $3`, ownerID, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("store: list documents: %w", err)
	}
	if len(docs) <= limit {
		return docs, "", nil
	}
	docs = docs[:limit]
	return docs, docs[limit-1].ID, nil
}

// SessionDocuments returns the documents of owner uploaded through the
// session sessionID, in the order they were uploaded. 'session_id' is
// store.SessionMetaKey, written out as index documents_session names it.
func (s *Store) SessionDocuments(ownerID, sessionID string) ([]store.Document, error) {
	ctx, cancel := opContext()
	defer cancel()
	docs, err := s.queryDocs(ctx, "SELECT "+docColumns+` FROM documents
		WHERE metadata ? 'session_id' AND metadata->>'session_id' = $2 AND owner_id = $1
		ORDER BY id COLLATE "C"`, ownerID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("store: list the documents of session %s: %w", sessionID, err)
	}
	return docs, nil
}

// queryDocs runs a query of docColumns and returns its documents.
func (s *Store) queryDocs(ctx context.Context, query string, args ...any) ([]store.Document, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Document, error) {
		d, err := scanDoc(row)
		if err != nil {
			return store.Document{}, err
		}
		return *d, nil
	})
}

// DeleteDocument removes a document, its chunks and vectors, ends its job
// if it has not run, frees its external id and drops its reference to its
// original file, the file going with its last reference. It returns the
// chunk sequences removed, for the caller to drop from the index.
func (s *Store) DeleteDocument(id string) ([]uint64, error) {
	ctx, cancel := opContext()
	defer cancel()
	var removed []uint64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		d, err := lockDocument(ctx, tx, id)
		if err != nil {
			return err
		}
		if removed, err = s.removeDocument(ctx, tx, d, "the document was deleted before it was processed"); err != nil {
			return err
		}
		if len(removed) == 0 {
			return nil
		}
		return s.notifyChunks(ctx, tx, d.OwnerID)
	})
	if err != nil {
		return nil, fmt.Errorf("store: delete document %s: %w", id, err)
	}
	return removed, nil
}

// lockDocument reads a document locked for a change, taking the locks in
// the order every writer takes them (see chunks.go): its external id's,
// its job's (the order ClaimJob locks a job and its document in), then its
// own. A document gone meanwhile is store.ErrNotFound.
func lockDocument(ctx context.Context, tx pgx.Tx, id string) (*store.Document, error) {
	var jobID, owner, externalID string
	if err := tx.QueryRow(ctx, "SELECT job_id, owner_id, external_id FROM documents WHERE id = $1", id).
		Scan(&jobID, &owner, &externalID); err != nil {
		return nil, notFound(err)
	}
	if externalID != "" {
		if err := lockExternalID(ctx, tx, owner, externalID); err != nil {
			return nil, err
		}
	}
	return lockJobAndDocument(ctx, tx, jobID, id)
}

// lockJobAndDocument locks a job, then its document, and reads the
// document.
func lockJobAndDocument(ctx context.Context, tx pgx.Tx, jobID, id string) (*store.Document, error) {
	if _, err := tx.Exec(ctx, "SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", jobID); err != nil {
		return nil, fmt.Errorf("lock job %s: %w", jobID, err)
	}
	return scanDoc(tx.QueryRow(ctx, "SELECT "+docColumns+" FROM documents WHERE id = $1 FOR UPDATE", id))
}

// removeDocument deletes d's record, chunks and vectors, frees its external
// id, ends its job with reason if it has not run, and drops its reference
// to its original file. d is locked (lockDocument). It returns the chunk
// sequences removed; the caller notifies.
func (s *Store) removeDocument(ctx context.Context, tx pgx.Tx, d *store.Document, reason string) ([]uint64, error) {
	// Its subpages go with it: its pages are then neither served nor kept.
	if _, err := tx.Exec(ctx, "DELETE FROM subpages WHERE document_id = $1", d.ID); err != nil {
		return nil, fmt.Errorf("delete subpages: %w", err)
	}
	removed, err := deleteChunks(ctx, tx, d)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM documents WHERE id = $1", d.ID); err != nil {
		return nil, fmt.Errorf("delete document: %w", err)
	}
	if d.ExternalID != "" {
		if _, err := tx.Exec(ctx, `DELETE FROM external_ids
			WHERE owner_id = $1 AND external_id = $2 AND document_id = $3`, d.OwnerID, d.ExternalID, d.ID); err != nil {
			return nil, fmt.Errorf("free external id: %w", err)
		}
	}
	// A job already running notices the document is gone when it ends.
	ended, err := tx.Exec(ctx, `UPDATE jobs SET status = $2, error = $3, updated_at = $4, due_at = NULL
		WHERE id = $1 AND status = $5`, d.JobID, store.StatusFailed, reason, s.timestamp(), store.StatusPending)
	if err != nil {
		return nil, fmt.Errorf("end job: %w", err)
	}
	if ended.RowsAffected() > 0 {
		if err := s.notifyJob(ctx, tx, d.JobID, d.OwnerID); err != nil {
			return nil, err
		}
	}
	if err := releaseFile(ctx, tx, d.OwnerID, d.FileHash); err != nil {
		return nil, err
	}
	// Its room in its project's quotas comes back at once, its bytes
	// too, whether or not another document keeps the file. Last, as in
	// CreateDocument: the project's row is locked after the file's.
	if _, err := addUsage(ctx, tx, d.ProjectID, store.ProjectUsage{Documents: -1, StoredBytes: -d.Size}); err != nil {
		return nil, err
	}
	return removed, nil
}
