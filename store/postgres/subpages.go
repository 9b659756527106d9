package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// Subpages are rows with their PDF in them, so any node serves any
// subpage. subpage_cuts names the one subpage of a document's pages that
// requests share, as the bbolt store's subpagecuts bucket does (both
// named when slicing a subpage was called cutting one; kept, as existing
// databases hold them).

// subpagePiece is how much of a subpage's PDF one query reads: the memory
// a download holds, whatever the file's size, for a round trip per piece
// (eighty for a 20 MB subpage).
const subpagePiece = 256 << 10

const subpageColumns = `s.id, s.project_id, s.owner_id, s.document_id, s.first_page, s.last_page,
	s.size, s.file_name, s.created_at, s.expires_at`

func scanSubpage(row pgx.Row) (*store.Subpage, error) {
	var sp store.Subpage
	err := row.Scan(&sp.ID, &sp.ProjectID, &sp.OwnerID, &sp.DocumentID, &sp.FirstPage, &sp.LastPage,
		&sp.Size, &sp.FileName, &sp.CreatedAt, &sp.ExpiresAt)
	if err != nil {
		return nil, notFound(err)
	}
	sp.CreatedAt, sp.ExpiresAt = sp.CreatedAt.UTC(), sp.ExpiresAt.UTC()
	return &sp, nil
}

// SubpageFor returns the live subpage of pages first to last of a
// document, or store.ErrNotFound.
func (s *Store) SubpageFor(documentID string, first, last int) (*store.Subpage, error) {
	ctx, cancel := opContext()
	defer cancel()
	sp, err := scanSubpage(s.pool.QueryRow(ctx, `SELECT `+subpageColumns+`
		FROM subpage_cuts c JOIN subpages s ON s.id = c.subpage_id
		WHERE c.document_id = $1 AND c.first_page = $2 AND c.last_page = $3`, documentID, first, last))
	if err == nil && sp.Expired(s.timestamp()) {
		return nil, store.ErrNotFound
	}
	return sp, err
}

// SubpageUsage returns what projectID and ownerID, one of its owners,
// keep in live subpages.
func (s *Store) SubpageUsage(projectID, ownerID string) (store.SubpageUsage, error) {
	ctx, cancel := opContext()
	defer cancel()
	return subpageUsage(ctx, s.pool, projectID, ownerID, s.timestamp())
}

// rowQuerier is a pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func subpageUsage(ctx context.Context, q rowQuerier, projectID, ownerID string, now time.Time) (store.SubpageUsage, error) {
	var u store.SubpageUsage
	var nextProject, nextOwner *time.Time
	err := q.QueryRow(ctx, `SELECT count(*), coalesce(sum(size) FILTER (WHERE owner_id = $2), 0),
			min(expires_at), min(expires_at) FILTER (WHERE owner_id = $2)
		FROM subpages WHERE project_id = $1 AND expires_at > $3`, projectID, ownerID, now).
		Scan(&u.ProjectSubpages, &u.OwnerBytes, &nextProject, &nextOwner)
	if err != nil {
		return u, fmt.Errorf("store: subpage usage: %w", err)
	}
	if nextProject != nil {
		u.NextProjectExpiry = nextProject.UTC()
	}
	if nextOwner != nil {
		u.NextOwnerExpiry = nextOwner.UTC()
	}
	return u, nil
}

// CreateSubpage stores a subpage of sp.DocumentID's pages sp.FirstPage to
// sp.LastPage with its PDF, valid for ttl, or returns store.ErrNotFound
// when the document is gone. When a live subpage of the same pages
// appeared meanwhile, on this node or another, that one is returned and
// data is dropped. A new one that would take its project or owner past
// limits is store.ErrSubpageQuota or store.ErrSubpageBudget.
func (s *Store) CreateSubpage(sp store.Subpage, data []byte, ttl time.Duration, limits store.SubpageLimits) (*store.Subpage, error) {
	ctx, cancel := opContext()
	defer cancel()
	now := s.timestamp()
	sp = store.NewSubpage(sp, data, ttl, now)
	sp.ExpiresAt = sp.ExpiresAt.Truncate(time.Microsecond)
	var out *store.Subpage
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Its document, locked until this commits: a delete, which locks
		// it first (lockDocument), then either has removed it, or waits
		// and then removes this subpage with it.
		var doc string
		if err := tx.QueryRow(ctx, "SELECT id FROM documents WHERE id = $1 FOR SHARE", sp.DocumentID).Scan(&doc); err != nil {
			return fmt.Errorf("document %s: %w", sp.DocumentID, notFound(err))
		}
		// One create at a time per project, so that two on two nodes
		// cannot both fit in the room left for one.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('subpages ' || $1, 0))", sp.ProjectID); err != nil {
			return err
		}
		// Take the pages unless a live subpage holds them. A creator
		// racing this one waits here on the pages' subpage_cuts row, then
		// finds ours live. The row's reference to its subpage is checked at
		// commit,
		// so the PDF is written only by the creator that won.
		var taken string
		err := tx.QueryRow(ctx, `INSERT INTO subpage_cuts AS c (document_id, first_page, last_page, subpage_id, expires_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (document_id, first_page, last_page) DO UPDATE
				SET subpage_id = excluded.subpage_id, expires_at = excluded.expires_at
				WHERE c.expires_at <= $6
			RETURNING subpage_id`, sp.DocumentID, sp.FirstPage, sp.LastPage, sp.ID, sp.ExpiresAt, now).Scan(&taken)
		if errors.Is(err, pgx.ErrNoRows) {
			out, err = scanSubpage(tx.QueryRow(ctx, `SELECT `+subpageColumns+`
				FROM subpage_cuts c JOIN subpages s ON s.id = c.subpage_id
				WHERE c.document_id = $1 AND c.first_page = $2 AND c.last_page = $3`, sp.DocumentID, sp.FirstPage, sp.LastPage))
			return err
		}
		if err != nil {
			return err
		}
		u, err := subpageUsage(ctx, tx, sp.ProjectID, sp.OwnerID, now)
		if err != nil {
			return err
		}
		if err := u.Check(limits, sp.Size); err != nil {
			return err
		}
		out = &sp
		_, err = tx.Exec(ctx, `INSERT INTO subpages (id, project_id, owner_id, document_id,
			first_page, last_page, size, file_name, created_at, expires_at, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			sp.ID, sp.ProjectID, sp.OwnerID, sp.DocumentID, sp.FirstPage, sp.LastPage, sp.Size,
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
// or expired is store.ErrNotFound: the caller slices a new one.
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

// OpenSubpage opens a subpage's PDF, read a piece (subpagePiece) at a
// time as it is asked for: a download holds one piece, not the file, and
// a database connection only while it reads one. A subpage deleted or
// swept while it is read ends the read with store.ErrNotFound.
func (s *Store) OpenSubpage(id string) (store.SubpageFile, error) {
	ctx, cancel := opContext()
	defer cancel()
	var size int64
	if err := s.pool.QueryRow(ctx, "SELECT size FROM subpages WHERE id = $1", id).Scan(&size); err != nil {
		return nil, fmt.Errorf("store: open subpage %s: %w", id, notFound(err))
	}
	return &subpageFile{s: s, id: id, size: size}, nil
}

// subpageFile reads a subpage's PDF from its row a piece at a time.
type subpageFile struct {
	s        *Store
	id       string
	size     int64
	off      int64  // where the next Read starts
	piece    []byte // the bytes of the file from pieceOff
	pieceOff int64
}

func (f *subpageFile) Read(p []byte) (int, error) {
	if f.off >= f.size {
		return 0, io.EOF
	}
	if f.off < f.pieceOff || f.off >= f.pieceOff+int64(len(f.piece)) {
		if err := f.load(f.off); err != nil {
			return 0, err
		}
	}
	n := copy(p, f.piece[f.off-f.pieceOff:])
	f.off += int64(n)
	return n, nil
}

// load reads the piece of the file that starts at off.
func (f *subpageFile) load(off int64) error {
	ctx, cancel := opContext()
	defer cancel()
	var piece []byte
	// substring counts from 1. The column is stored uncompressed, so
	// the database reads only the piece's part of it.
	err := f.s.pool.QueryRow(ctx, "SELECT substring(data FROM $2 FOR $3) FROM subpages WHERE id = $1",
		f.id, off+1, subpagePiece).Scan(&piece)
	if err != nil {
		return fmt.Errorf("store: read subpage %s: %w", f.id, notFound(err))
	}
	if len(piece) == 0 {
		return fmt.Errorf("store: read subpage %s: %w", f.id, io.ErrUnexpectedEOF)
	}
	f.piece, f.pieceOff = piece, off
	return nil
}

func (f *subpageFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	}
	if offset < 0 {
		return 0, fmt.Errorf("store: seek subpage %s: negative offset", f.id)
	}
	f.off = offset
	return offset, nil
}

func (f *subpageFile) Close() error {
	f.piece = nil
	return nil
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
