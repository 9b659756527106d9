package cli

import (
	"fmt"
	"math"
	"strings"
)

// autoMemoryShare is the share of the memory the process may use that
// --memory-limit auto gives the Go runtime. The rest is for what the
// runtime does not count and the server needs beside it: the page cache
// that holds the memory-mapped snapshots and the bbolt file searches
// read, and MuPDF's own allocations while it reads a document.
//
// Without a limit the heap grows to about twice its live data before the
// collector runs (GOGC): an ingest over 3,000 customers peaked at
// 0.93-1.01 GB of anonymous memory, and at 0.70-0.72 GB with a limit of
// 700 MiB, as fast for 3-6% more CPU a document (`bench scale --chunks
// 300000 --customers 3000`, GOMEMLIMIT=700MiB in its environment, two
// runs each). On a machine with room to spare three quarters never binds;
// on a small VM it makes the collector work harder instead of the kernel
// killing the server.
const autoMemoryShare = 0.75

// minMemoryLimit is the smallest limit --memory-limit takes: the server's
// own heap is tens of megabytes before it holds anything.
const minMemoryLimit = 64 << 20

// goMemoryLimit is what --memory-limit asks of the Go runtime.
type goMemoryLimit struct {
	bytes int64  // the soft limit; math.MaxInt64 is none
	keep  bool   // leave the runtime's own (GOMEMLIMIT in the environment)
	from  string // where it came from, for the log
}

// resolveMemoryLimit reads --memory-limit: auto, off (or 0), or a size.
// auto leaves a GOMEMLIMIT the environment sets, and is otherwise
// autoMemoryShare of what available says the process may use (nothing
// when it cannot tell).
func resolveMemoryLimit(flag string, lookupEnv func(string) (string, bool), available func() (uint64, string)) (goMemoryLimit, error) {
	switch v := strings.TrimSpace(flag); v {
	case "auto", "": // empty: as unset (DOCSIFT_MEMORY_LIMIT= in an env file)
		if env, ok := lookupEnv("GOMEMLIMIT"); ok {
			return goMemoryLimit{keep: true, from: "GOMEMLIMIT=" + env}, nil
		}
		n, where := available()
		if n == 0 {
			return goMemoryLimit{bytes: math.MaxInt64, from: "auto: the memory available is unknown"}, nil
		}
		return goMemoryLimit{
			bytes: int64(float64(n) * autoMemoryShare),
			from:  fmt.Sprintf("auto: three quarters of the %s's %s", where, sizeLabel(int64(n))),
		}, nil
	case "off":
		return goMemoryLimit{bytes: math.MaxInt64, from: "off"}, nil
	}
	n, err := parseByteSize(flag)
	if err != nil {
		return goMemoryLimit{}, fmt.Errorf("%w, auto or off", err)
	}
	switch {
	case n == 0:
		return goMemoryLimit{bytes: math.MaxInt64, from: "off"}, nil
	case n < minMemoryLimit:
		return goMemoryLimit{}, fmt.Errorf("%s is below %s, where the collector would run without end: give a size such as 2GiB, auto or off", sizeLabel(n), sizeLabel(minMemoryLimit))
	}
	return goMemoryLimit{bytes: n, from: "--memory-limit"}, nil
}
