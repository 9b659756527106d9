package runtimepolicy

import "runtime/debug"

// ReturnMemory collects garbage and returns as much memory to the system
// as it can, at once rather than as the runtime's scavenger gets round
// to it. It is for the moments a large heap became garbage at once: a
// preview's heap when the whole index behind it has loaded, and the heap
// of indexes that moved onto the snapshots they wrote. It is a whole
// collection: never with a lock held that others wait for, and once for
// many indexes rather than once each (a collection after each owner made
// a stop with a thousand customers take 12–37 s, one a second).
func ReturnMemory() { debug.FreeOSMemory() }

// AutoMemoryShare is the share of the memory the process may use that
// the automatic Go memory limit takes (serve --memory-limit auto). The
// rest is for what the runtime does not count and the server needs beside
// it: the page cache that holds the memory-mapped snapshots and the bbolt
// file searches read, and MuPDF's own allocations while it reads a
// document.
//
// Without a limit the heap grows to about twice its live data before the
// collector runs (GOGC): an ingest over 3,000 customers peaked at
// 0.93–1.01 GB of anonymous memory, and at 0.70–0.72 GB with a limit of
// 700 MiB, as fast for 3–6% more CPU a document (`bench scale --chunks
// 300000 --customers 3000`, GOMEMLIMIT=700MiB in its environment, two
// runs each). On a machine with room to spare three quarters never binds;
// on a small VM it makes the collector work harder instead of the kernel
// killing the server.
const AutoMemoryShare = 0.75

// MinMemoryLimit is the smallest memory limit the server takes: its own
// heap is tens of megabytes before it holds anything, and below that the
// collector would run without end.
const MinMemoryLimit = 64 << 20

// AutoMemoryLimit is the memory limit for a process that may use
// available bytes: AutoMemoryShare of them.
func AutoMemoryLimit(available uint64) int64 { return int64(float64(available) * AutoMemoryShare) }

// LimitMemory sets the Go runtime's soft memory limit to limit bytes
// (math.MaxInt64: none), unless keep (GOMEMLIMIT in the environment
// stands), and returns the limit in force.
func LimitMemory(limit int64, keep bool) int64 {
	if !keep {
		debug.SetMemoryLimit(limit)
	}
	return debug.SetMemoryLimit(-1)
}
