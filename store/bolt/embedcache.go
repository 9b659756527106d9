package bolt

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// The embedding cache saves the model's work when a text comes again: a
// document uploaded a second time, a job that re-runs after a crash, a
// reindex that starts over, a page two documents share. Embedding is by far
// the slowest step with a real model (seconds per chunk on a CPU), and the
// vector of a text under a model never changes, so a vector the store
// already holds is as good as a new one.
//
// It is not a second copy of vectors. Vectors are already stored per chunk
// (model, seq); the cache is only an index from a chunk's text to the
// chunks that have it: owner \x00 hash \x00 seq → nil. A lookup walks the
// chunks with the text and takes the first that has a vector of the model
// asked for. An entry is written and deleted in the same transactions as its
// chunk, so it never outlives the chunk; a vector deleted on its own (the
// old model's, when a reindex finishes) simply stops being found. Nothing
// needs garbage collection, and nothing can serve a vector that is gone.
//
// What the hash covers. It is the SHA-256 of the text handed to the
// embedder (for ingest: the document's name and the chunk's text), before
// any task prefix the model adds (nomic-embed-text's "search_document: ").
// The prefix is a function of the model's name, and the name is part of
// every lookup (through the vector's key), so (model, text) determines
// exactly what the model read; keying on the unprefixed text lets one entry
// per chunk serve every model the owner's chunks are embedded with, staged
// reindex vectors included. A model replaced under the same name (a newer
// pull of nomic-embed-text) is not detected here, as it is not for the
// owner's existing vectors: that is what `docsift reindex` is for.
//
// Only a model server's embeddings are cached. The built-in embedder makes
// a vector in microseconds, less than a look-up here costs, while an entry
// is a key that lands anywhere in this bucket's tree: the leaves and
// branches these dirtied were 13% of the pages an ingest's commits wrote
// around 70,000 chunks. Its chunks carry no hash, so a reindex from
// such an owner resumes from the vectors it staged (ingest/reindex.go),
// not from here.
//
// Entries are per owner. Across owners the cache would tell one tenant,
// through how fast its upload is indexed, that another holds a given text;
// within an owner there is nothing to hide.

// bucketEmbedCache is owner \x00 text hash (64 hex digits) 8-byte chunk
// sequence → nil: the chunks of an owner whose vectors were made from a
// text. See the comment above.
var bucketEmbedCache = []byte("embedcache")

// textHashLen is the length of a TextHash: SHA-256 in hex.
const textHashLen = 2 * sha256.Size

func embedCacheKey(owner, hash string, seq uint64) []byte {
	return append(ownerKey(owner, []byte(hash)), u64(seq)...)
}

// cacheChunk records that chunk c's vectors are embeddings of the text
// whose hash it carries. A chunk without a hash (written before the cache
// existed) is not cached.
func cacheChunk(tx *bbolt.Tx, c *store.Chunk) error {
	if len(c.TextHash) != textHashLen {
		return nil
	}
	return tx.Bucket(bucketEmbedCache).Put(embedCacheKey(c.OwnerID, c.TextHash, c.Seq), nil)
}

// uncacheChunk removes chunk seq's entry, in the transaction that deletes
// the chunk.
func uncacheChunk(tx *bbolt.Tx, owner, hash string, seq uint64) error {
	if len(hash) != textHashLen {
		return nil
	}
	return tx.Bucket(bucketEmbedCache).Delete(embedCacheKey(owner, hash, seq))
}

// CachedVectors returns, for each hash, a vector of model that the store
// already holds for a chunk of owner made from the text with that hash, or
// nil when there is none. It reads one transaction.
func (s *Store) CachedVectors(owner, model string, hashes []string) ([][]float32, error) {
	out := make([][]float32, len(hashes))
	err := s.db.View(func(tx *bbolt.Tx) error {
		c, vb := tx.Bucket(bucketEmbedCache).Cursor(), tx.Bucket(bucketVectors)
		for i, h := range hashes {
			if len(h) != textHashLen {
				continue
			}
			prefix := ownerKey(owner, []byte(h))
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				if len(k) != len(prefix)+8 {
					continue
				}
				if v := vb.Get(vectorKey(model, fromU64(k[len(prefix):]))); v != nil {
					out[i] = store.DecodeVector(v)
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: cached vectors of %s: %w", owner, err)
	}
	return out, nil
}

// EmbedCacheEntries counts the cache's entries of an owner: what deleting
// its documents must bring to zero.
func (s *Store) EmbedCacheEntries(owner string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := ownerKey(owner, nil)
		c := tx.Bucket(bucketEmbedCache).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: embedding cache of %s: %w", owner, err)
	}
	return n, nil
}
