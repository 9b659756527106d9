package postgres

import (
	"crypto/sha256"
	"fmt"

	"github.com/docsift/docsift/store"
	"github.com/jackc/pgx/v5"
)

// The embedding cache (see store/bolt/embedcache.go for what it is for and
// what its hash covers) is here nothing but the index chunks_text_hash on
// (owner_id, text_hash): a lookup joins an owner's chunks made from a text
// with their vectors of the model asked for. An entry is its chunk's row,
// so it is written and deleted with the chunk, and a vector deleted on its
// own simply stops being found, as on bbolt.

// textHashLen is the length of store.TextHash, SHA-256 in hex. Chunks
// with a hash of another length (none, from before the cache) are not
// cached, as on bbolt.
const textHashLen = 2 * sha256.Size

// CachedVectors returns, for each hash, a vector of model that the store
// already holds for a chunk of owner made from the text with that hash (of
// the chunks with it, the one with the lowest sequence), or nil when there
// is none. It reads one query.
func (s *Store) CachedVectors(owner, model string, hashes []string) ([][]float32, error) {
	var wanted []string
	for _, h := range hashes {
		if len(h) == textHashLen {
			wanted = append(wanted, h)
		}
	}
	out := make([][]float32, len(hashes))
	if len(wanted) == 0 {
		return out, nil
	}
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (c.text_hash) c.text_hash, v.data
		FROM chunks c JOIN vectors v ON v.seq = c.seq AND v.model = $2
		WHERE c.owner_id = $1 AND c.text_hash = ANY($3) ORDER BY c.text_hash, c.seq`, owner, model, wanted)
	if err != nil {
		return nil, fmt.Errorf("store: cached vectors of %s: %w", owner, err)
	}
	found := map[string][]byte{}
	var hash string
	var data []byte
	if _, err := pgx.ForEachRow(rows, []any{&hash, &data}, func() error {
		found[hash] = data
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: cached vectors of %s: %w", owner, err)
	}
	for i, h := range hashes {
		if data, ok := found[h]; ok {
			out[i] = store.DecodeVector(data) // a vector of its own for each place a hash is asked
		}
	}
	return out, nil
}

// EmbedCacheEntries counts the cache's entries of an owner: its chunks
// with a text hash.
func (s *Store) EmbedCacheEntries(owner string) (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM chunks WHERE owner_id = $1 AND length(text_hash) = $2",
		owner, textHashLen).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: embedding cache of %s: %w", owner, err)
	}
	return n, nil
}
