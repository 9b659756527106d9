package runtimepolicy

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestLimitMemory: the limit is set unless kept, and the one in force is
// returned either way.
func TestLimitMemory(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(was)
	if got := LimitMemory(1<<30, false); got != 1<<30 {
		t.Errorf("limit set to 1 GiB reads %d", got)
	}
	if got := LimitMemory(2<<30, true); got != 1<<30 {
		t.Errorf("a kept limit became %d, want the 1 GiB in force", got)
	}
	if got := LimitMemory(math.MaxInt64, false); got != math.MaxInt64 {
		t.Errorf("no limit reads %d", got)
	}
}

func TestAutoLimits(t *testing.T) {
	if got := AutoMemoryLimit(4 << 30); got != 3<<30 {
		t.Errorf("AutoMemoryLimit(4 GiB) = %d, want 3 GiB", got)
	}
	for _, c := range []struct {
		limit, want int64
		capped      bool
	}{
		{math.MaxInt64, DefaultGCHeadroom, false},
		{3 << 30, DefaultGCHeadroom, false},
		{1 << 30, 128 << 20, true},
	} {
		if got, capped := AutoGCHeadroom(c.limit); got != c.want || capped != c.capped {
			t.Errorf("AutoGCHeadroom(%d) = %d, %v; want %d, %v", c.limit, got, capped, c.want, c.capped)
		}
	}
}
