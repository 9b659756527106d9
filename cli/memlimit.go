package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/docsift/docsift/internal/runtimepolicy"
)

// goMemoryLimit is what --memory-limit asks of the Go runtime (see
// runtimepolicy's AutoMemoryShare for why the server sets one).
type goMemoryLimit struct {
	bytes int64  // the soft limit; math.MaxInt64 is none
	keep  bool   // leave the runtime's own (GOMEMLIMIT in the environment)
	from  string // where it came from, for the log
}

// resolveMemoryLimit reads --memory-limit: auto, off (or 0), or a size.
// auto leaves a GOMEMLIMIT the environment sets, and is otherwise
// runtimepolicy.AutoMemoryLimit of what available says the process may
// use (nothing when it cannot tell).
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
			bytes: runtimepolicy.AutoMemoryLimit(n),
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
	case n < runtimepolicy.MinMemoryLimit:
		return goMemoryLimit{}, fmt.Errorf("%s is below %s, where the collector would run without end: give a size such as 2GiB, auto or off", sizeLabel(n), sizeLabel(runtimepolicy.MinMemoryLimit))
	}
	return goMemoryLimit{bytes: n, from: "--memory-limit"}, nil
}
