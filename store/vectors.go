package store

import bolt "go.etcd.io/bbolt"

// Vectors returns the vectors of the chunks seqs under model, in order,
// with nil for a chunk that has none: a batch of Vector, as an index
// rebuilt from the store reads them.
func (s *Store) Vectors(model string, seqs []uint64) ([][]float32, error) {
	out := make([][]float32, len(seqs))
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVectors)
		for i, seq := range seqs {
			if v := b.Get(vectorKey(model, seq)); v != nil {
				out[i] = DecodeVector(v)
			}
		}
		return nil
	})
	return out, err
}
