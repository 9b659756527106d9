package ollama

import (
	"testing"
	"time"
)

func TestBatchSizerFollowsTheModelsSpeed(t *testing.T) {
	b := batchSizer{max: 32}
	if n := b.next(); n != firstBatchSize {
		t.Fatalf("first batch %d, want %d", n, firstBatchSize)
	}
	b.observe(1, 150*time.Millisecond) // a small model on a CPU: 0.15 s a text
	if n := b.next(); n != 3 {
		t.Errorf("after 0.15 s a text: batch %d, want 3 (about %s a request)", n, targetBatchTime)
	}
	for range 20 {
		b.observe(3, 30*time.Millisecond) // the machine got fast
	}
	if n := b.next(); n != 32 {
		t.Errorf("after 10 ms a text: batch %d, want the configured 32", n)
	}
	b.observe(32, 10*time.Second) // one slow request: smoothed, not taken whole
	if n := b.next(); n < 2 {
		t.Errorf("one slow request shrank the batch to %d", n)
	}
	slow := batchSizer{max: 8}
	slow.observe(1, time.Minute)
	if n := slow.next(); n != 1 {
		t.Errorf("a model slower than the target: batch %d, want 1", n)
	}
}
