package store

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
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
// bits), a count of the ids made before it in that millisecond (16 bits),
// then 64 random bits, enough that ids never collide and cannot be
// enumerated.
//
// The time goes first so that ids made together sort together. Records
// are keyed by id in B-trees that bbolt rewrites a page at a time: a
// group commit of documents with random ids wrote a leaf page (and its
// branches) in each bucket for each document, and with ordered ones the
// same few pages at the right edge for all of them (see fillAppended).
// The count makes the ids one process makes sort in the order it made
// them, so that an owner's documents listed by id are in the order they
// were uploaded, page after page (see Documents).
func NewID(prefix string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], idClock.next(time.Now().UnixMilli()))
	if _, err := rand.Read(b[8:]); err != nil {
		panic(fmt.Sprintf("store: crypto/rand failed: %v", err)) // the OS has no entropy: nothing safe to do
	}
	return prefix + idEncoding.EncodeToString(b[:])
}

// IsID reports whether id is one NewID(prefix) could have made, or one
// made before ids began with their time: 16 characters of base32 (RFC
// 4648, lower case), which data from then still holds.
func IsID(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	switch {
	case !ok:
		return false
	case len(rest) == 16:
		_, err := legacyIDEncoding.DecodeString(rest)
		return err == nil
	case len(rest) == 26:
		_, err := idEncoding.DecodeString(rest)
		return err == nil
	}
	return false
}

// legacyIDEncoding is that of the ids made before NewID put the time first.
var legacyIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idClock hands out the first 64 bits of ids: milliseconds and a count
// within one, never the same twice and never going back, even when the
// system clock does (the last millisecond is kept until the clock passes
// it) or when more than 65,536 ids are made in one millisecond (the
// count then carries into the next).
var idClock idCounter

type idCounter struct {
	sync.Mutex
	last uint64
}

// next returns the first 64 bits of the id made at ms.
func (c *idCounter) next(ms int64) uint64 {
	now := uint64(ms) << 16
	c.Lock()
	defer c.Unlock()
	c.last = max(c.last+1, now)
	return c.last
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
