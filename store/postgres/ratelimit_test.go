package postgres

import (
	"testing"
	"time"

	"github.com/docsift/docsift/internal/pgtest"
)

// Two stores on one database (two nodes) draw on the same bucket: between
// them they get the burst and no more, and a refusal says how long until
// the next token.
func TestTakeTokenSharedBetweenNodes(t *testing.T) {
	url := pgtest.Start(t).Database(t)
	a, b := open(t, url), open(t, url)
	const perSecond, burst = 0.5, 4 // a token every 2 s
	granted := 0
	var refusedFor time.Duration
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wait, err := s.TakeToken("project prj_a", perSecond, burst)
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			granted++
		} else {
			refusedFor = wait
		}
	}
	if granted != burst {
		t.Fatalf("granted %d of 10 requests across two nodes; want the burst, %d", granted, burst)
	}
	if refusedFor <= 0 || refusedFor > 2*time.Second {
		t.Fatalf("refused request waits %s; want up to 2s (one token at 0.5/s)", refusedFor)
	}
	// Another key has a bucket of its own.
	if wait, err := b.TakeToken("project prj_b", perSecond, burst); err != nil || wait != 0 {
		t.Fatalf("another key: wait %s, %v", wait, err)
	}
	if n, err := a.SweepRateBuckets(time.Hour); err != nil || n != 0 {
		t.Fatalf("sweep of buckets used just now removed %d, %v", n, err)
	}
}
