package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// ReplaceChunks writes a document's chunks and their vectors, embedded by
// model, in one transaction, replacing whatever a previous run wrote, and
// assigns each chunk its Seq. It returns the sequences of the replaced
// chunks, which the caller drops from the index. A deleted document is
// ErrNotFound; vectors of another model than the owner's are
// ErrModelMismatch.
//
// vectors[i] may be nil: chunk i is written without a vector, so that it
// can be searched by its words at once, and gets one later through
// AddVectors. The document's job records how many of its chunks have
// vectors (Job.Chunks, Job.ChunksEmbedded) in the same transaction.
//
// A document with an external id takes it over once every chunk has a
// vector, here or in AddVectors (see external.go): the document holding
// it is removed and its chunks' sequences are returned with the others,
// so that one index commit swaps the old version for the new. A document
// created before the holder is ErrSuperseded and writes nothing.
func (s *Store) ReplaceChunks(documentID, model string, chunks []store.Chunk, vectors [][]float32) ([]uint64, error) {
	if len(chunks) != len(vectors) {
		return nil, fmt.Errorf("store: replace chunks: %d chunks but %d vectors", len(chunks), len(vectors))
	}
	embedded := 0
	dim := 0
	for _, v := range vectors {
		if v != nil {
			embedded, dim = embedded+1, len(v)
		}
	}
	var removed, replaced []uint64
	var owner, orphan string
	err := s.update(func(tx *bbolt.Tx) error {
		removed, replaced, orphan = nil, nil, "" // from a run rolled back (see update)
		d, err := getDoc(tx, documentID)
		if err != nil {
			return err
		}
		owner = d.OwnerID
		if embedded == len(chunks) {
			if replaced, orphan, err = s.takeOverExternalID(tx, d); err != nil {
				return err
			}
		} else if _, err := otherHolder(tx, d); err != nil {
			return err
		}
		if embedded > 0 {
			if err := claimOwnerModel(tx, d.OwnerID, model, dim); err != nil {
				return err
			}
		}
		if removed, err = deleteChunks(tx, d); err != nil {
			return err
		}
		cb := tx.Bucket(bucketChunks)
		for i := range chunks {
			c := &chunks[i]
			c.ID, c.DocumentID, c.OwnerID = store.ChunkID(d.ID, c.Position), d.ID, d.OwnerID
			if err := writeChunk(tx, c, model, vectors[i]); err != nil {
				return err
			}
			if err := put(cb, c.ID, c); err != nil {
				return err
			}
		}
		return setJobChunks(tx, d.JobID, len(chunks), embedded, s.now().UTC())
	})
	if err != nil {
		return nil, fmt.Errorf("store: replace chunks of %s: %w", documentID, err)
	}
	if orphan != "" {
		// The records are committed, and the caller must apply them to
		// the index whatever happens to the file: one left behind is
		// swept at next start.
		_ = s.removeOrphanFile(owner, orphan)
	}
	return append(removed, replaced...), nil
}

// writeChunk gives c a new sequence number and writes its sequence
// entries, its embedding cache entry and, when vec is not nil, its vector
// of model. The caller writes the chunk record itself. A chunk's sequence
// names one content: its text and, once it has one, its vector. So a
// chunk that gets its vector gets a new sequence, and an index snapshot,
// which covers sequences, is never stale about a vector without knowing it.
func writeChunk(tx *bbolt.Tx, c *store.Chunk, model string, vec []float32) error {
	var err error
	if c.Seq, err = tx.Bucket(bucketChunks).NextSequence(); err != nil {
		return err
	}
	seq := u64(c.Seq)
	if err := cacheChunk(tx, c); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSeqs).Put(seq, []byte(c.ID)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketOwnerSeqs).Put(ownerKey(c.OwnerID, seq), nil); err != nil {
		return err
	}
	if vec == nil {
		return nil
	}
	return tx.Bucket(bucketVectors).Put(vectorKey(model, c.Seq), store.EncodeVector(vec))
}

// AddVectors gives chunks of a document written without vectors (see
// ReplaceChunks) their vectors of model, in one transaction: vectors[i]
// is that of the chunk with sequence seqs[i]. Each such chunk gets a new
// sequence (see writeChunk), returned in seqs' order, 0 for a chunk that is
// gone or already had a vector. removed lists the sequences the caller
// drops from the index: the old ones and, when the document's last chunk
// got its vector, those of the document whose external id it took over.
// complete reports that every chunk of the document now has a vector. A
// deleted document is ErrNotFound.
func (s *Store) AddVectors(documentID, model string, seqs []uint64, vectors [][]float32) (newSeqs, removed []uint64, complete bool, err error) {
	if len(seqs) != len(vectors) {
		return nil, nil, false, fmt.Errorf("store: add vectors: %d chunks but %d vectors", len(seqs), len(vectors))
	}
	var owner, orphan string
	err = s.update(func(tx *bbolt.Tx) error {
		// Reset what a run rolled back left (see update).
		newSeqs, removed, complete, orphan = make([]uint64, len(seqs)), nil, false, ""
		d, err := getDoc(tx, documentID)
		if err != nil {
			return err
		}
		owner = d.OwnerID
		if len(vectors) > 0 {
			if err := claimOwnerModel(tx, d.OwnerID, model, len(vectors[0])); err != nil {
				return err
			}
		}
		cb, sb, ob, vb := tx.Bucket(bucketChunks), tx.Bucket(bucketSeqs), tx.Bucket(bucketOwnerSeqs), tx.Bucket(bucketVectors)
		for i, seq := range seqs {
			id := sb.Get(u64(seq))
			if id == nil || vb.Get(vectorKey(model, seq)) != nil {
				continue
			}
			c, err := get[store.Chunk](cb, string(id))
			if err != nil {
				return err
			}
			if c.DocumentID != documentID {
				continue
			}
			if err := uncacheChunk(tx, c.OwnerID, c.TextHash, seq); err != nil {
				return err
			}
			if err := sb.Delete(u64(seq)); err != nil {
				return err
			}
			if err := ob.Delete(ownerKey(c.OwnerID, u64(seq))); err != nil {
				return err
			}
			for _, m := range ownerModels(tx, c.OwnerID) { // a reindex may have staged one
				if err := vb.Delete(vectorKey(m, seq)); err != nil {
					return err
				}
			}
			if err := writeChunk(tx, c, model, vectors[i]); err != nil {
				return err
			}
			if err := put(cb, c.ID, c); err != nil {
				return err
			}
			newSeqs[i] = c.Seq
			removed = append(removed, seq)
		}
		total, embedded, err := countEmbedded(tx, d, model)
		if err != nil {
			return err
		}
		if complete = embedded == total; complete {
			replaced, o, err := s.takeOverExternalID(tx, d)
			if err != nil {
				return err
			}
			removed, orphan = append(removed, replaced...), o
		}
		return setJobChunks(tx, d.JobID, total, embedded, s.now().UTC())
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: add vectors to %s: %w", documentID, err)
	}
	if orphan != "" {
		_ = s.removeOrphanFile(owner, orphan) // as in ReplaceChunks
	}
	return newSeqs, removed, complete, nil
}

// countEmbedded counts d's chunks and those of them with a vector of model.
func countEmbedded(tx *bbolt.Tx, d *store.Document, model string) (total, embedded int, err error) {
	vb := tx.Bucket(bucketVectors)
	prefix := []byte(chunkPrefix(d.ID))
	c := tx.Bucket(bucketChunks).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var ch struct {
			Seq uint64 `json:"seq"`
		}
		if err := decode(v, &ch); err != nil {
			return 0, 0, err
		}
		total++
		if vb.Get(vectorKey(model, ch.Seq)) != nil {
			embedded++
		}
	}
	return total, embedded, nil
}

// DeleteChunks removes a document's chunks, their vectors and cache
// entries, keeping the document: what a job that fails for good leaves of
// the chunks it wrote before their vectors. It returns their sequences. A
// deleted document is ErrNotFound.
func (s *Store) DeleteChunks(documentID string) ([]uint64, error) {
	var removed []uint64
	err := s.update(func(tx *bbolt.Tx) error {
		d, err := getDoc(tx, documentID)
		if err != nil {
			return err
		}
		removed, err = deleteChunks(tx, d)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: delete chunks of %s: %w", documentID, err)
	}
	return removed, nil
}

// deleteChunks removes every chunk of d with its sequence entries, vectors
// and embedding cache entry.
func deleteChunks(tx *bbolt.Tx, d *store.Document) ([]uint64, error) {
	cb, sb, ob, vb := tx.Bucket(bucketChunks), tx.Bucket(bucketSeqs), tx.Bucket(bucketOwnerSeqs), tx.Bucket(bucketVectors)
	prefix := []byte(chunkPrefix(d.ID))
	models := ownerModels(tx, d.OwnerID)
	var ids [][]byte
	var seqs []uint64
	c := cb.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var ch struct {
			Seq      uint64 `json:"seq"`
			TextHash string `json:"text_hash"`
		}
		if err := decode(v, &ch); err != nil {
			return nil, err
		}
		ids = append(ids, bytes.Clone(k))
		seqs = append(seqs, ch.Seq)
		if err := uncacheChunk(tx, d.OwnerID, ch.TextHash, ch.Seq); err != nil {
			return nil, err
		}
	}
	for i, id := range ids {
		seq := u64(seqs[i])
		for _, del := range []struct {
			b *bbolt.Bucket
			k []byte
		}{{cb, id}, {sb, seq}, {ob, ownerKey(d.OwnerID, seq)}} {
			if err := del.b.Delete(del.k); err != nil {
				return nil, err
			}
		}
		for _, m := range models {
			if err := vb.Delete(vectorKey(m, seqs[i])); err != nil {
				return nil, err
			}
		}
	}
	return seqs, nil
}

// Chunk returns a chunk by id.
func (s *Store) Chunk(id string) (*store.Chunk, error) {
	return record[store.Chunk](s, bucketChunks, id)
}

// ChunksBySeq returns the chunks with the given sequences, in that order,
// skipping any that no longer exist.
func (s *Store) ChunksBySeq(seqs []uint64) ([]store.Chunk, error) {
	out := make([]store.Chunk, 0, len(seqs))
	err := s.db.View(func(tx *bbolt.Tx) error {
		sb, cb := tx.Bucket(bucketSeqs), tx.Bucket(bucketChunks)
		for _, seq := range seqs {
			id := sb.Get(u64(seq))
			if id == nil {
				continue
			}
			c, err := get[store.Chunk](cb, string(id))
			if err != nil {
				return err
			}
			out = append(out, *c)
		}
		return nil
	})
	return out, err
}

// OwnerSeqs returns the sequences of every chunk an owner has, ascending.
func (s *Store) OwnerSeqs(ownerID string) ([]uint64, error) {
	var seqs []uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := ownerKey(ownerID, nil)
		c := tx.Bucket(bucketOwnerSeqs).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			seqs = append(seqs, fromU64(k[len(prefix):]))
		}
		return nil
	})
	return seqs, err
}

// Vector returns the vector model made of a chunk, or ErrNotFound.
func (s *Store) Vector(model string, seq uint64) ([]float32, error) {
	var vec []float32
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketVectors).Get(vectorKey(model, seq))
		if v == nil {
			return store.ErrNotFound
		}
		vec = store.DecodeVector(v)
		return nil
	})
	return vec, err
}

// vectorKey keys vectors by model first, so a reindex can write a new
// model's vectors beside the old ones and switch in one transaction.
func vectorKey(model string, seq uint64) []byte {
	return ownerKey(model, u64(seq))
}

// DocumentNames returns the name of every document chunks come from, by
// document id, read in one transaction. A document deleted meanwhile has no
// entry.
func (s *Store) DocumentNames(chunks []store.Chunk) (map[string]string, error) {
	names := make(map[string]string)
	err := s.db.View(func(tx *bbolt.Tx) error {
		for _, c := range chunks {
			if _, done := names[c.DocumentID]; done {
				continue
			}
			// Only the name is decoded: the rest of the record is
			// mostly times, and parsing them was most of the read.
			d, err := get[struct {
				Name string `json:"name"`
			}](tx.Bucket(bucketDocuments), c.DocumentID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			names[c.DocumentID] = d.Name
		}
		return nil
	})
	return names, err
}

// chunkPrefix is the common prefix of every ChunkID of a document.
func chunkPrefix(documentID string) string {
	return store.PrefixChunk + strings.TrimPrefix(documentID, store.PrefixDocument) + "-"
}
