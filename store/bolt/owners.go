package bolt

import (
	"bytes"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// OwnerModel returns the model an owner's vectors come from, or ErrNotFound
// for an owner with no vectors yet.
func (s *Store) OwnerModel(owner string) (*store.OwnerModel, error) {
	return record[store.OwnerModel](s, bucketOwners, owner)
}

// claimOwnerModel records model for an owner without one, and refuses a
// model other than the recorded one.
func claimOwnerModel(tx *bbolt.Tx, owner, model string, dim int) error {
	b := tx.Bucket(bucketOwners)
	om, err := get[store.OwnerModel](b, owner)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return put(b, owner, store.OwnerModel{Model: model, Dim: dim})
	case err != nil:
		return err
	case om.Model != model || om.Dim != dim:
		return fmt.Errorf("%w: owner %s has vectors of %s (%d dimensions), not %s (%d)", store.ErrModelMismatch, owner, om.Model, om.Dim, model, dim)
	}
	return nil
}

// ClaimOwnerModel records model, of dim dimensions, as the one an owner's
// vectors come from when it has none yet; another model than the recorded
// one is ErrModelMismatch. Chunks written before their vectors thus leave
// the owner's index sized for the vectors to come.
func (s *Store) ClaimOwnerModel(owner, model string, dim int) error {
	// Most calls find the model recorded: a read answers them without a
	// commit.
	var recorded bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		om, err := get[store.OwnerModel](tx.Bucket(bucketOwners), owner)
		recorded = err == nil && om.Model == model && om.Dim == dim
		return nil
	})
	if err == nil && !recorded {
		err = s.update(func(tx *bbolt.Tx) error { return claimOwnerModel(tx, owner, model, dim) })
	}
	if err != nil {
		return fmt.Errorf("store: claim model of %s: %w", owner, err)
	}
	return nil
}

// ownerModels lists the models whose vectors an owner may have: its own and
// the one a reindex is staging.
func ownerModels(tx *bbolt.Tx, owner string) []string {
	om, err := get[store.OwnerModel](tx.Bucket(bucketOwners), owner)
	if err != nil {
		return nil
	}
	if om.Next != "" && om.Next != om.Model {
		return []string{om.Model, om.Next}
	}
	return []string{om.Model}
}

// BeginReindex records that vectors of next are being staged for an owner,
// so deletes remove them too.
func (s *Store) BeginReindex(owner, next string) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketOwners)
		om, err := get[store.OwnerModel](b, owner)
		if err != nil {
			return fmt.Errorf("store: begin reindex of %s: %w", owner, err)
		}
		om.Next = next
		return put(b, owner, om)
	})
}

// PutVectors stages vectors of model for chunk sequences of an owner that
// is being reindexed. Sequences whose chunk is gone are skipped.
func (s *Store) PutVectors(model string, seqs []uint64, vectors [][]float32) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		sb, vb := tx.Bucket(bucketSeqs), tx.Bucket(bucketVectors)
		for i, seq := range seqs {
			if sb.Get(u64(seq)) == nil {
				continue
			}
			if err := vb.Put(vectorKey(model, seq), store.EncodeVector(vectors[i])); err != nil {
				return err
			}
		}
		return nil
	})
}

// MissingVectors returns the owner's chunk sequences with no vector of model.
func (s *Store) MissingVectors(owner, model string) ([]uint64, error) {
	seqs, err := s.OwnerSeqs(owner)
	if err != nil {
		return nil, err
	}
	var missing []uint64
	err = s.db.View(func(tx *bbolt.Tx) error {
		vb := tx.Bucket(bucketVectors)
		for _, seq := range seqs {
			if vb.Get(vectorKey(model, seq)) == nil {
				missing = append(missing, seq)
			}
		}
		return nil
	})
	return missing, err
}

// FinishReindex switches an owner to model in one transaction, provided
// every chunk has a vector of it, and deletes the old model's vectors.
func (s *Store) FinishReindex(owner, model string, dim int) error {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketOwners)
		om, err := get[store.OwnerModel](b, owner)
		if err != nil {
			return err
		}
		vb := tx.Bucket(bucketVectors)
		prefix := ownerKey(owner, nil)
		c := tx.Bucket(bucketOwnerSeqs).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			seq := fromU64(k[len(prefix):])
			if vb.Get(vectorKey(model, seq)) == nil {
				return fmt.Errorf("chunk sequence %d has no vector of %s yet", seq, model)
			}
			if om.Model != model {
				if err := vb.Delete(vectorKey(om.Model, seq)); err != nil {
					return err
				}
			}
		}
		return put(b, owner, store.OwnerModel{Model: model, Dim: dim})
	})
	if err != nil {
		return fmt.Errorf("store: finish reindex of %s: %w", owner, err)
	}
	return nil
}

// Owners lists every owner that has vectors, with their models.
func (s *Store) Owners() (map[string]store.OwnerModel, error) {
	out := map[string]store.OwnerModel{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketOwners)
		return b.ForEach(func(k, _ []byte) error {
			om, err := get[store.OwnerModel](b, string(k))
			if err != nil {
				return err
			}
			out[string(k)] = *om
			return nil
		})
	})
	return out, err
}
