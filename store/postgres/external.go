package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// External ids follow store.OtherHolder's rule (store/rules.go), as on
// bbolt: each has at most one holder, a new upload takes a free one at
// once (CreateDocument), a candidate takes over when the last of its
// chunks gets a vector, and of two uploads the later created wins.
//
// Every transaction that may change who holds an external id first takes
// lockExternalID's advisory lock, so two candidates finishing together, or
// a candidate and the holder's delete, go one after the other. A row lock
// would not do: the row may not exist yet.

// lockExternalID holds, until the transaction ends, the lock of an owner's
// external id. Two ids hashing alike only wait for each other.
func lockExternalID(ctx context.Context, tx pgx.Tx, owner, externalID string) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('external_id ' || $1 || ' ' || $2, 0))",
		owner, externalID); err != nil {
		return fmt.Errorf("lock external id: %w", err)
	}
	return nil
}

// takeOverExternalID makes d, whose chunks all have vectors, the holder of
// its external id, removing the document that held it. It returns the
// removed document's chunk sequences. A holder created after d wins: the
// result is then store.ErrSuperseded, and the caller rolls back.
func (s *Store) takeOverExternalID(ctx context.Context, tx pgx.Tx, d *store.Document) ([]uint64, error) {
	h, err := otherHolder(ctx, tx, d)
	if err != nil || d.ExternalID == "" {
		return nil, err
	}
	var removed []uint64
	if h != nil {
		if removed, err = s.removeDocument(ctx, tx, h, "replaced by a newer upload with the same external_id before it was processed"); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO external_ids (owner_id, external_id, document_id) VALUES ($1, $2, $3)
		ON CONFLICT (owner_id, external_id) DO UPDATE SET document_id = EXCLUDED.document_id`,
		d.OwnerID, d.ExternalID, d.ID); err != nil {
		return nil, fmt.Errorf("take over external id: %w", err)
	}
	return removed, nil
}

// otherHolder returns, locked, the document d would take its external id
// over from (see store.OtherHolder). The caller holds lockExternalID
// (lockDocument took it).
func otherHolder(ctx context.Context, tx pgx.Tx, d *store.Document) (*store.Document, error) {
	return store.OtherHolder(d, func() (*store.Document, error) {
		var holderID, jobID string
		err := tx.QueryRow(ctx, `SELECT e.document_id, d.job_id FROM external_ids e JOIN documents d ON d.id = e.document_id
			WHERE e.owner_id = $1 AND e.external_id = $2`, d.OwnerID, d.ExternalID).Scan(&holderID, &jobID)
		switch {
		case errors.Is(err, pgx.ErrNoRows): // free, or a dangling entry
			return nil, store.ErrNotFound
		case err != nil:
			return nil, fmt.Errorf("read holder of external id: %w", err)
		case holderID == d.ID:
			return d, nil
		}
		return lockJobAndDocument(ctx, tx, jobID, holderID)
	})
}

// DocumentByExternalID returns the document of owner that holds
// externalID, or store.ErrNotFound.
func (s *Store) DocumentByExternalID(ownerID, externalID string) (*store.Document, error) {
	ctx, cancel := opContext()
	defer cancel()
	return scanDoc(s.pool.QueryRow(ctx, "SELECT "+docColumns+` FROM documents WHERE id =
		(SELECT document_id FROM external_ids WHERE owner_id = $1 AND external_id = $2)`, ownerID, externalID))
}
