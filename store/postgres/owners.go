package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// An owner's row in owners records which model its vectors come from
// (store.OwnerModel). Whoever writes or deletes an owner's chunks or
// vectors holds that row FOR SHARE until it commits, and FinishReindex,
// which switches the model and deletes the old one's vectors, holds it
// FOR UPDATE: so a switch waits for the writes under way, and a write that
// comes after it sees the new model.

// OwnerModel returns the model an owner's vectors come from, or
// store.ErrNotFound for an owner with no vectors yet.
func (s *Store) OwnerModel(owner string) (*store.OwnerModel, error) {
	ctx, cancel := opContext()
	defer cancel()
	var om store.OwnerModel
	if err := s.pool.QueryRow(ctx, "SELECT model, dim, next_model FROM owners WHERE owner_id = $1", owner).
		Scan(&om.Model, &om.Dim, &om.Next); err != nil {
		return nil, notFound(err)
	}
	return &om, nil
}

// claimOwnerModel records model for an owner without one, and refuses a
// model other than the recorded one with store.ErrModelMismatch. It holds
// the owner's row FOR SHARE.
func claimOwnerModel(ctx context.Context, tx pgx.Tx, owner, model string, dim int) error {
	if _, err := tx.Exec(ctx, `INSERT INTO owners (owner_id, model, dim) VALUES ($1, $2, $3)
		ON CONFLICT (owner_id) DO NOTHING`, owner, model, dim); err != nil {
		return fmt.Errorf("claim model: %w", err)
	}
	var om store.OwnerModel
	if err := tx.QueryRow(ctx, "SELECT model, dim FROM owners WHERE owner_id = $1 FOR SHARE", owner).
		Scan(&om.Model, &om.Dim); err != nil {
		return fmt.Errorf("claim model: %w", err)
	}
	if om.Model != model || om.Dim != dim {
		return fmt.Errorf("%w: owner %s has vectors of %s (%d dimensions), not %s (%d)",
			store.ErrModelMismatch, owner, om.Model, om.Dim, model, dim)
	}
	return nil
}

// ownerRowLock holds an owner's row FOR SHARE, for a transaction that
// deletes its vectors; an owner without a row has no vectors to race for.
func ownerRowLock(ctx context.Context, tx pgx.Tx, owner string) error {
	if _, err := tx.Exec(ctx, "SELECT 1 FROM owners WHERE owner_id = $1 FOR SHARE", owner); err != nil {
		return fmt.Errorf("lock owner %s: %w", owner, err)
	}
	return nil
}

// ClaimOwnerModel records model, of dim dimensions, as the one an owner's
// vectors come from when it has none yet; another model than the recorded
// one is store.ErrModelMismatch.
func (s *Store) ClaimOwnerModel(owner, model string, dim int) error {
	ctx, cancel := opContext()
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return claimOwnerModel(ctx, tx, owner, model, dim) })
	if err != nil {
		return fmt.Errorf("store: claim model of %s: %w", owner, err)
	}
	return nil
}

// BeginReindex records that vectors of next are being staged for an owner.
func (s *Store) BeginReindex(owner, next string) error {
	ctx, cancel := opContext()
	defer cancel()
	tag, err := s.pool.Exec(ctx, "UPDATE owners SET next_model = $2 WHERE owner_id = $1", owner, next)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("store: begin reindex of %s: %w", owner, err)
	}
	return nil
}

// PutVectors stages vectors of model for chunk sequences of an owner that
// is being reindexed, in one statement. Sequences whose chunk is gone are
// skipped; of a sequence given twice, the last vector stays.
func (s *Store) PutVectors(model string, seqs []uint64, vectors [][]float32) error {
	if len(seqs) != len(vectors) {
		return fmt.Errorf("store: stage vectors: %d chunks but %d vectors", len(seqs), len(vectors))
	}
	last := make(map[uint64]int, len(seqs))
	for i, seq := range seqs {
		last[seq] = i
	}
	keys := make([]int64, 0, len(last))
	data := make([][]byte, 0, len(last))
	for i, seq := range seqs {
		if last[seq] == i {
			keys, data = append(keys, int64(seq)), append(data, store.EncodeVector(vectors[i]))
		}
	}
	ctx, cancel := opContext()
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// KEY SHARE keeps each chunk from going (or getting a new
		// sequence) until the vector is in; a chunk that went first is
		// not joined, so skipped.
		rows, err := tx.Query(ctx, `WITH staged AS (
				SELECT c.seq, c.owner_id, u.data FROM unnest($2::bigint[], $3::bytea[]) AS u (seq, data)
				JOIN chunks c ON c.seq = u.seq FOR KEY SHARE OF c),
			written AS (INSERT INTO vectors (seq, model, data) SELECT seq, $1, data FROM staged
				ON CONFLICT (seq, model) DO UPDATE SET data = EXCLUDED.data)
			SELECT DISTINCT owner_id FROM staged`, model, keys, data)
		if err != nil {
			return err
		}
		owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, owner := range owners {
			if err := s.notifyChunks(ctx, tx, owner); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: stage vectors of %s: %w", model, err)
	}
	return nil
}

// MissingVectors returns the owner's chunk sequences with no vector of
// model, ascending.
func (s *Store) MissingVectors(owner, model string) ([]uint64, error) {
	ctx, cancel := opContext()
	defer cancel()
	missing, err := collectSeqs(s.pool.Query(ctx, `SELECT seq FROM chunks c WHERE owner_id = $1
		AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.seq = c.seq AND v.model = $2) ORDER BY seq`, owner, model))
	if err != nil {
		return nil, fmt.Errorf("store: missing vectors of %s: %w", owner, err)
	}
	return missing, nil
}

// FinishReindex switches an owner to model in one transaction, provided
// every chunk has a vector of it, and deletes the old model's vectors.
func (s *Store) FinishReindex(owner, model string, dim int) error {
	ctx, cancel := opContext()
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var old store.OwnerModel
		if err := tx.QueryRow(ctx, "SELECT model, dim FROM owners WHERE owner_id = $1 FOR UPDATE", owner).
			Scan(&old.Model, &old.Dim); err != nil {
			return notFound(err)
		}
		var lacking int64
		err := tx.QueryRow(ctx, `SELECT seq FROM chunks c WHERE owner_id = $1
			AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.seq = c.seq AND v.model = $2) ORDER BY seq LIMIT 1`,
			owner, model).Scan(&lacking)
		if err == nil {
			return fmt.Errorf("chunk sequence %d has no vector of %s yet", lacking, model)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if old.Model != model {
			if _, err := tx.Exec(ctx, `DELETE FROM vectors v USING chunks c
				WHERE c.owner_id = $1 AND v.seq = c.seq AND v.model = $2`, owner, old.Model); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, "UPDATE owners SET model = $2, dim = $3, next_model = '' WHERE owner_id = $1",
			owner, model, dim); err != nil {
			return err
		}
		if old.Model == model && old.Dim == dim {
			return nil // what is searched stays as it was
		}
		return s.notifyChunks(ctx, tx, owner)
	})
	if err != nil {
		return fmt.Errorf("store: finish reindex of %s: %w", owner, err)
	}
	return nil
}

// Owners lists every owner that has vectors, with their models.
func (s *Store) Owners() (map[string]store.OwnerModel, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT owner_id, model, dim, next_model FROM owners")
	if err != nil {
		return nil, fmt.Errorf("store: list owners: %w", err)
	}
	defer rows.Close()
	out := map[string]store.OwnerModel{}
	for rows.Next() {
		var owner string
		var om store.OwnerModel
		if err := rows.Scan(&owner, &om.Model, &om.Dim, &om.Next); err != nil {
			return nil, fmt.Errorf("store: list owners: %w", err)
		}
		out[owner] = om
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list owners: %w", err)
	}
	return out, nil
}
