package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Id prefixes say what an id names, so a customer id pasted where a document
// id belongs is caught before any lookup.
const (
	PrefixProject  = "prj_"
	PrefixCustomer = "cus_"
	PrefixDocument = "doc_"
	PrefixJob      = "job_"
	PrefixChunk    = "chk_"
	PrefixSession  = "ses_"
	PrefixSubpage  = "sub_"
	PrefixKey      = "key_"
	PrefixAPIKey   = "dsk_"
)

// idEncoding is base32 with the digits before the letters, as in ASCII
// (Crockford's alphabet, lower case), so that encoded numbers sort as the
// numbers do.
var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns prefix and 26 characters: the time in milliseconds (48
// bits), then 80 random bits, enough that ids never collide and cannot
// be enumerated.
//
// The time goes first so that ids made together sort together. Records
// are keyed by id in B-trees that bbolt rewrites a page at a time: a
// group commit of documents with random ids wrote a leaf page (and its
// branches) in each bucket for each document, and with ordered ones the
// same few pages at the right edge for all of them (see fillAppended).
func NewID(prefix string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16) // 48 bits, then 80 random
	if _, err := rand.Read(b[6:]); err != nil {
		panic(fmt.Sprintf("store: crypto/rand failed: %v", err)) // the OS has no entropy: nothing safe to do
	}
	return prefix + idEncoding.EncodeToString(b[:])
}

// NewSecret returns prefix followed by 256 random bits, for API keys and
// session tokens: values that grant access on their own.
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("store: crypto/rand failed: %v", err))
	}
	return prefix + idEncoding.EncodeToString(b)
}

// ChunkID derives a chunk's id from its document and position, so re-running
// a job overwrites the chunks it wrote before instead of adding copies.
func ChunkID(documentID string, position int) string {
	return fmt.Sprintf("%s%s-%04d", PrefixChunk, strings.TrimPrefix(documentID, PrefixDocument), position)
}

// chunkPrefix is the common prefix of every ChunkID of a document.
func chunkPrefix(documentID string) string {
	return PrefixChunk + strings.TrimPrefix(documentID, PrefixDocument) + "-"
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
