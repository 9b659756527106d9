package store

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// An id carries the millisecond it was made in its first characters, so
// that ids sort by when they were made, and ids made in the same
// millisecond differ.
func TestNewIDSortsByTime(t *testing.T) {
	msOf := func(id string) int64 {
		b, err := idEncoding.DecodeString(strings.TrimPrefix(id, PrefixDocument))
		if err != nil || len(b) != 16 {
			t.Fatalf("id %s: not prefix and 16 bytes: %v", id, err)
		}
		return int64(binary.BigEndian.Uint64(b[:8]) >> 16)
	}
	seen := map[string]bool{}
	var prev string
	for start := time.Now().UnixMilli(); time.Now().UnixMilli() < start+3; {
		before := time.Now().UnixMilli()
		id := NewID(PrefixDocument)
		after := time.Now().UnixMilli()
		if !strings.HasPrefix(id, PrefixDocument) || len(id) != len(PrefixDocument)+26 {
			t.Fatalf("id %s: want %s and 26 characters", id, PrefixDocument)
		}
		if ms := msOf(id); ms < before || ms > after {
			t.Fatalf("id %s says %d ms, made between %d and %d", id, ms, before, after)
		}
		if seen[id] {
			t.Fatalf("id %s made twice", id)
		}
		seen[id] = true
		if prev != "" && msOf(prev) < msOf(id) && prev >= id {
			t.Fatalf("id %s, made a millisecond before %s, sorts after it", prev, id)
		}
		prev = id
	}
}
