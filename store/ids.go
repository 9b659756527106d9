package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
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

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns prefix followed by 80 random bits: enough that ids never
// collide and cannot be enumerated.
func NewID(prefix string) string { return prefix + randomString(10) }

// NewSecret returns prefix followed by 256 random bits, for API keys and
// session tokens: values that grant access on their own.
func NewSecret(prefix string) string { return prefix + randomString(32) }

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("store: crypto/rand failed: %v", err)) // the OS has no entropy: nothing safe to do
	}
	return idEncoding.EncodeToString(b)
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
