package pgstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// Subpages are rows with their PDF in them, so any node serves any
// subpage. subpage_cuts names the one subpage a chunk and varience reuse,
// as the bbolt store's by-chunk index does.

const subpageColumns = `s.id, s.project_id, s.owner_id, s.chunk_id, s.varience, s.first_page, s.last_page,
	s.file_name, s.created_at, s.expires_at`

func scanSubpage(row pgx.Row) (*store.Subpage, error) {
	var sp store.Subpage
	err := row.Scan(&sp.ID, &sp.ProjectID, &sp.OwnerID, &sp.ChunkID, &sp.Varience, &sp.FirstPage, &sp.LastPage,
		&sp.FileName, &sp.CreatedAt, &sp.ExpiresAt)
	if err != nil {
		return nil, notFound(err)
	}
	sp.CreatedAt, sp.ExpiresAt = sp.CreatedAt.UTC(), sp.ExpiresAt.UTC()
	return &sp, nil
}

// SubpageFor returns the live subpage of a chunk and varience, or
// store.ErrNotFound.
func (s *Store) SubpageFor(chunkID string, varience int) (*store.Subpage, error) {
	ctx, cancel := opContext()
	defer cancel()
	sp, err := scanSubpage(s.pool.QueryRow(ctx, `SELECT `+subpageColumns+`
		FROM subpage_cuts c JOIN subpages s ON s.id = c.subpage_id
		WHERE c.chunk_id = $1 AND c.varience = $2`, chunkID, varience))
	if err == nil && sp.Expired(s.timestamp()) {
		return nil, store.ErrNotFound
	}
	return sp, err
}

// CreateSubpage stores a subpage and its PDF, valid for ttl, or returns
// store.ErrNotFound when its chunk is gone. When a live subpage of the
// same chunk and varience appeared meanwhile, on this node or another,
// that one is returned and data is dropped.
func (s *Store) CreateSubpage(sp store.Subpage, data []byte, ttl time.Duration) (*store.Subpage, error) {
	ctx, cancel := opContext()
	defer cancel()
	now := s.timestamp()
	sp.CreatedAt = now
	sp.ExpiresAt = now.Add(ttl).Truncate(time.Microsecond)
	var out *store.Subpage
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Its chunk's document, locked until this commits: a delete,
		// which locks it first (lockDocument), then either has removed
		// it, or waits and then removes this subpage with it.
		var doc string
		err := tx.QueryRow(ctx, `SELECT d.id FROM documents d JOIN chunks c ON c.document_id = d.id
			WHERE c.id = $1 FOR SHARE OF d`, sp.ChunkID).Scan(&doc)
		if err != nil {
			return fmt.Errorf("chunk %s: %w", sp.ChunkID, notFound(err))
		}
		// Take the cut unless a live subpage holds it. A creator racing
		// this one waits here on the cut's row, then finds ours live. The
		// cut's reference to its subpage is checked at commit, so the
		// PDF is written only by the creator that won.
		var taken string
		err = tx.QueryRow(ctx, `INSERT INTO subpage_cuts AS c (chunk_id, varience, subpage_id, expires_at)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (chunk_id, varience) DO UPDATE
				SET subpage_id = excluded.subpage_id, expires_at = excluded.expires_at
				WHERE c.expires_at <= $5
			RETURNING subpage_id`, sp.ChunkID, sp.Varience, sp.ID, sp.ExpiresAt, now).Scan(&taken)
		if errors.Is(err, pgx.ErrNoRows) {
			out, err = scanSubpage(tx.QueryRow(ctx, `SELECT `+subpageColumns+`
				FROM subpage_cuts c JOIN subpages s ON s.id = c.subpage_id
				WHERE c.chunk_id = $1 AND c.varience = $2`, sp.ChunkID, sp.Varience))
			return err
		}
		if err != nil {
			return err
		}
		out = &sp
		_, err = tx.Exec(ctx, `INSERT INTO subpages (id, project_id, owner_id, chunk_id, varience,
			first_page, last_page, file_name, created_at, expires_at, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			sp.ID, sp.ProjectID, sp.OwnerID, sp.ChunkID, sp.Varience, sp.FirstPage, sp.LastPage,
			sp.FileName, sp.CreatedAt, sp.ExpiresAt, data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: create subpage: %w", err)
	}
	return out, nil
}

// ExtendSubpage makes a live subpage valid for ttl from now, so that its
// URL, handed out again, lasts as a new one would. A subpage that is gone
// or expired is store.ErrNotFound: the caller cuts a new one.
func (s *Store) ExtendSubpage(id string, ttl time.Duration) (*store.Subpage, error) {
	ctx, cancel := opContext()
	defer cancel()
	now := s.timestamp()
	expires := now.Add(ttl).Truncate(time.Microsecond)
	var sp *store.Subpage
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		sp, err = scanSubpage(tx.QueryRow(ctx, `UPDATE subpages s SET expires_at = $2
			WHERE s.id = $1 AND s.expires_at > $3 RETURNING `+subpageColumns, id, expires, now))
		if err != nil {
			return notFound(err)
		}
		_, err = tx.Exec(ctx, "UPDATE subpage_cuts SET expires_at = $2 WHERE subpage_id = $1", id, expires)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: extend subpage %s: %w", id, err)
	}
	return sp, nil
}

// Subpage returns a subpage record by id, expired or not.
func (s *Store) Subpage(id string) (*store.Subpage, error) {
	ctx, cancel := opContext()
	defer cancel()
	return scanSubpage(s.pool.QueryRow(ctx, "SELECT "+subpageColumns+" FROM subpages s WHERE s.id = $1", id))
}

// ReadSubpage returns a subpage's PDF.
func (s *Store) ReadSubpage(id string) ([]byte, error) {
	ctx, cancel := opContext()
	defer cancel()
	var data []byte
	if err := s.pool.QueryRow(ctx, "SELECT data FROM subpages WHERE id = $1", id).Scan(&data); err != nil {
		return nil, fmt.Errorf("store: read subpage %s: %w", id, notFound(err))
	}
	return data, nil
}

// SweepSubpages deletes expired subpages, their PDFs with them, and
// returns how many it removed.
func (s *Store) SweepSubpages() (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM subpages WHERE expires_at <= $1", s.timestamp())
	if err != nil {
		return 0, fmt.Errorf("store: sweep subpages: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
