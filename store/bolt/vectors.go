package bolt

import (
	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// Vectors returns the vectors of the chunks seqs under model, in order,
// with nil for a chunk that has none: a batch of Vector, as an index
// rebuilt from the store reads them.
func (s *Store) Vectors(model string, seqs []uint64) ([][]float32, error) {
	out := make([][]float32, len(seqs))
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketVectors)
		for i, seq := range seqs {
			if v := b.Get(vectorKey(model, seq)); v != nil {
				out[i] = store.DecodeVector(v)
			}
		}
		return nil
	})
	return out, err
}
