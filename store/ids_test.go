package store

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// An id carries the millisecond it was made in its first characters, so
// that ids sort by when they were made, and ids made in the same
// millisecond differ and sort in the order they were made.
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
		if prev != "" && prev >= id {
			t.Fatalf("id %s, made before %s, sorts after it", prev, id)
		}
		prev = id
	}
}

// The count within a millisecond carries into the next one, and a clock
// that goes back does not take ids back with it.
func TestIDCounterNeverGoesBack(t *testing.T) {
	var c idCounter
	const ms = 1_700_000_000_000
	first := c.next(ms)
	if first != ms<<16 {
		t.Fatalf("first id of a millisecond: %x, want %x", first, uint64(ms)<<16)
	}
	last := first
	for i := 1; i < 70_000; i++ { // more than 16 bits' worth in one millisecond
		v := c.next(ms)
		if v != last+1 {
			t.Fatalf("id %d of one millisecond: %x after %x", i, v, last)
		}
		last = v
	}
	if last>>16 != ms+1 {
		t.Fatalf("after 70,000 ids in millisecond %d the count says millisecond %d, want it carried into the next", ms, last>>16)
	}
	if v := c.next(ms - 5_000); v != last+1 {
		t.Fatalf("clock 5 s back: %x after %x, want the next after it", v, last)
	}
	if v := c.next(ms + 10); v != (ms+10)<<16 {
		t.Fatalf("clock past the last id: %x, want %x", v, uint64(ms+10)<<16)
	}
}

// IsID takes the ids NewID makes and those made before ids began with
// their time, which data from then still holds (a cursor of a list of
// its documents is one): nothing else.
func TestIsID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{NewID(PrefixDocument), true},
		{"doc_mfrggzdfmztwq2lk", true}, // 16 characters of the older ids' base32
		{"cus_mfrggzdfmztwq2lk", false},
		{"doc_mfrggzdfmztwq2l", false},
		{"doc_mfrggzdfmztwq2l1", false},           // 1 is not in the older alphabet
		{"doc_06h121cb5r000qcgy6fcq4wjwu", false}, // u is not in the newer one
		{"doc_", false},
		{"", false},
	} {
		if got := IsID(c.id, PrefixDocument); got != c.want {
			t.Errorf("IsID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}
