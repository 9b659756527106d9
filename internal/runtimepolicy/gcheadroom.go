package runtimepolicy

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// The collector runs when the heap has grown by GOGC percent of what the
// last collection found live: by default as much again. A small server's
// live heap is tens of megabytes while an ingest allocates hundreds a
// second, so it collected several times a second, each time scanning
// that live heap again. Keeping the goal at least a fixed headroom above
// the live heap collects a small heap seldom and a large one as before
// (the percent never goes below the runtime's own). On the MS MARCO
// sample four times over (`bench scale --corpus`, 64 clients, seven
// rounds alternated on a quiet day) a headroom of 256 MiB took a median
// 0.286 ms of the server's CPU a document against 0.322 without, for 341–
// 351 MB of anonymous memory after the ingest against 97–108 (and 283
// after a restart and its queries against 30). A million chunks' live
// heap (233 MB after a start) is about the headroom: there the pace
// barely changes. Again on 2026-12-07, eight rounds in alternating order
// on a machine busy with other work: 0.39 ms of the server's CPU a
// document against 0.42, less in 7 rounds of 8, at about the same pace,
// for 306 MB of anonymous memory after the ingest against 65.
//
// The headroom is memory the server may hold and not use. The automatic
// one keeps it below an eighth of the Go memory limit, so a small VM's
// limit is not spent on it; near the limit the collector runs more often
// whatever the headroom. And it is kept only while the collector runs
// often: once a collection comes gcIdleAfter or more after the last (an
// idle server's come every two minutes, forced by the runtime), the
// percent goes back to the runtime's own, and after the next collection
// the runtime returns the pages above its goal to the system. A server on
// the MS MARCO sample held 186 MB after 3,000 queries and 19 MB after four
// and a half idle minutes (two forced collections).

// DefaultGCHeadroom is the automatic headroom when the memory limit
// leaves room for it.
const DefaultGCHeadroom = 256 << 20

// AutoGCHeadroom is the automatic headroom under memoryLimit:
// DefaultGCHeadroom, or an eighth of the limit when that is less (then
// capped is true).
func AutoGCHeadroom(memoryLimit int64) (headroom int64, capped bool) {
	if memoryLimit/8 < DefaultGCHeadroom {
		return memoryLimit / 8, true
	}
	return DefaultGCHeadroom, false
}

// gcIdleAfter is how far apart collections are when the headroom no
// longer pays: at most one collection in that time costs a server
// nothing worth the memory.
const gcIdleAfter = 30 * time.Second

// gcPercentFor is the collector's percent that puts its goal headroom
// above live bytes, and never below base, the runtime's own percent; base
// itself when the collection came gcIdleAfter or more after the last.
func gcPercentFor(live, headroom int64, base int, sinceLast time.Duration) int {
	if sinceLast >= gcIdleAfter {
		return base
	}
	live = max(live, 4<<20) // the runtime's least goal: no heap is smaller
	p := (100*headroom + live - 1) / live
	return int(max(int64(base), min(p, math.MaxInt32)))
}

// keepingGCHeadroom is set while a KeepGCHeadroom runs: the percent is
// the process's, and a second keeper (servers started side by side in
// one test binary) would take the first one's raised percent for the
// runtime's own.
var keepingGCHeadroom atomic.Bool

// KeepGCHeadroom sets the collector's percent after every collection (see
// above) until the returned stop is called, which restores the percent it
// found. tuned, when not nil, is told each percent it sets. While one
// keeps the headroom, another call does nothing, as does a headroom of 0
// or GOGC=off.
func KeepGCHeadroom(headroom int64, tuned func(percent int)) (stop func()) {
	if headroom <= 0 || !keepingGCHeadroom.CompareAndSwap(false, true) {
		return func() {}
	}
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gogc)
	base := int(int64(gogc[0].Value.Uint64()))
	if base < 0 { // GOGC=off
		keepingGCHeadroom.Store(false)
		return func() {}
	}
	var stopped atomic.Bool
	// When the last collection's cleanup ran, since start (atomic: a
	// cleanup may run on another goroutine than the last one's).
	start := time.Now()
	var last atomic.Int64
	var arm func()
	arm = func() {
		// A cleanup runs once the collector has found its object
		// unreachable: after each collection, on one of the runtime's
		// cleanup goroutines. Each run arms the next. The object is
		// not a tiny one: those share a slot, and their cleanups may
		// never run.
		runtime.AddCleanup(new([64]byte), func(struct{}) {
			if stopped.Load() {
				return
			}
			now := int64(time.Since(start))
			var since time.Duration // the first: a start, busy
			if prev := last.Swap(now); prev != 0 {
				since = time.Duration(now - prev)
			}
			sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			metrics.Read(sample)
			p := gcPercentFor(int64(sample[0].Value.Uint64()), headroom, base, since)
			debug.SetGCPercent(p)
			if tuned != nil {
				tuned(p)
			}
			arm()
		}, struct{}{})
	}
	arm()
	return func() {
		if stopped.Swap(true) {
			return
		}
		debug.SetGCPercent(base)
		keepingGCHeadroom.Store(false)
	}
}
