package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
)

// Chunk is a passage of a document, the unit of retrieval. Seq is a number
// unique across the store, assigned when the chunk is written: the index
// keys vectors by it, and a snapshot records the highest it covers.
type Chunk struct {
	ID         string `json:"chunk_id"`
	Seq        uint64 `json:"seq"`
	DocumentID string `json:"document_id"`
	OwnerID    string `json:"owner_id"`
	Position   int    `json:"position"`
	Page       int    `json:"page,omitempty"` // 1-based; 0 when the document has no pages
	Start      int    `json:"start"`          // character offsets in the extracted text of its page
	End        int    `json:"end"`
	Text       string `json:"text"`
	// TextHash is TextHash of the text its vectors were made from: the
	// embedding cache's key (see embedcache.go in store/bolt and
	// store/postgres). Empty for chunks written before the cache, or
	// embedded in process, which are not cached.
	TextHash string `json:"text_hash,omitempty"`
	// Sections are the titles of where the chunk's page sits in its
	// document (pdf.Page.Sections), searched with its headings.
	Sections []string `json:"sections,omitempty"`
}

// EncodeVector writes float32s little-endian: 4 bytes each, no framing,
// the dimension being the length divided by four. Both stores keep vectors
// so (the PostgreSQL one in a bytea column).
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads what EncodeVector wrote.
func DecodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TextHash is the embedding cache's key for a text: the SHA-256 of exactly
// the text embedded (before a model's task prefix), in hex. Callers record
// it in Chunk.TextHash.
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}
