package runtimepolicy

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live, headroom int64
		base, want     int
		since          time.Duration
	}{
		{64 << 20, 256 << 20, 100, 400, time.Second},          // a small heap may grow four times over
		{90 << 20, 256 << 20, 100, 285, time.Second},          // rounded up: the goal is at least the headroom
		{1 << 30, 256 << 20, 100, 100, time.Second},           // a large one collects at the runtime's own pace
		{1 << 30, 256 << 20, 150, 150, time.Second},           // which GOGC may have raised
		{0, 256 << 20, 100, 6400, time.Second},                // no heap counts as the runtime's least, 4 MiB
		{4 << 20, math.MaxInt64 / 200, 100, math.MaxInt32, 0}, // no overflow
		{64 << 20, 256 << 20, 100, 400, gcIdleAfter - time.Second},
		{64 << 20, 256 << 20, 100, 100, gcIdleAfter}, // collections far apart: no headroom
		{64 << 20, 256 << 20, 150, 150, 2 * time.Minute},
	} {
		if got := gcPercentFor(c.live, c.headroom, c.base, c.since); got != c.want {
			t.Errorf("gcPercentFor(%d, %d, %d, %v) = %d, want %d", c.live, c.headroom, c.base, c.since, got, c.want)
		}
	}
}

// TestKeepGCHeadroom runs real collections: after each the percent is
// raised for a test binary's small heap, and stop puts the runtime's own
// back.
func TestKeepGCHeadroom(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	tuned, stop := keepGCHeadroomTold()
	for range 2 { // the second run proves each run arms the next
		p, ok := collect(tuned)
		if !ok {
			t.Fatal("no percent set within 10s of a collection")
		}
		if p <= 100 {
			t.Errorf("percent after a collection = %d, want above 100 for a heap far below 256 MiB", p)
		}
	}
	if got := gcPercent(); got <= 100 {
		t.Errorf("/gc/gogc:percent = %d while kept, want above 100", got)
	}
	// A second keeper started while the first runs (two servers in one
	// test binary) must not take the first's raised percent for the
	// runtime's own: it does nothing, even once the first has stopped.
	_, stopSecond := keepGCHeadroomTold()
	stop()
	if got := gcPercent(); got != 100 {
		t.Errorf("/gc/gogc:percent = %d after stop, want 100", got)
	}
	runtime.GC()
	stopSecond()
	if got := gcPercent(); got != 100 {
		t.Errorf("/gc/gogc:percent = %d after a collection past stop and the second keeper's stop, want 100", got)
	}
	stop() // a second stop changes nothing
	tuned, stop = keepGCHeadroomTold()
	defer stop()
	if _, ok := collect(tuned); !ok {
		t.Error("a keeper started after the first stopped set no percent")
	}
}

// keepGCHeadroomTold keeps 256 MiB of headroom and sends each percent it
// sets on tuned, while there is room.
func keepGCHeadroomTold() (tuned chan int, stop func()) {
	tuned = make(chan int, 16)
	return tuned, KeepGCHeadroom(256<<20, func(p int) {
		select {
		case tuned <- p:
		default:
		}
	})
}

// collect runs a collection and returns the percent set after it, if one
// is within 10 s.
func collect(tuned chan int) (int, bool) {
	runtime.GC()
	select {
	case p := <-tuned:
		return p, true
	case <-time.After(10 * time.Second):
		return 0, false
	}
}

func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}
