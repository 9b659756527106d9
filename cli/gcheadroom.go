package cli

import (
	"fmt"
	"strings"

	"github.com/docsift/docsift/internal/runtimepolicy"
)

// gcHeadroom is what --gc-headroom asks for (see runtimepolicy's
// KeepGCHeadroom for why the server keeps one).
type gcHeadroom struct {
	bytes int64  // 0: leave the collector's percent alone
	from  string // where it came from, for the log
}

// resolveGCHeadroom reads --gc-headroom: auto, off (or 0), or a size.
// GOGC in the environment wins over auto: whoever set it chose the
// collector's pace.
func resolveGCHeadroom(flag string, lookupEnv func(string) (string, bool), memoryLimit int64) (gcHeadroom, error) {
	switch v := strings.TrimSpace(flag); v {
	case "auto", "":
		if env, ok := lookupEnv("GOGC"); ok {
			return gcHeadroom{from: "GOGC=" + env}, nil
		}
		n, capped := runtimepolicy.AutoGCHeadroom(memoryLimit)
		from := "auto"
		if capped {
			from = "auto: an eighth of the memory limit"
		}
		return gcHeadroom{bytes: n, from: from}, nil
	case "off":
		return gcHeadroom{from: "off"}, nil
	}
	n, err := parseByteSize(flag)
	if err != nil {
		return gcHeadroom{}, fmt.Errorf("%w, auto or off", err)
	}
	if n == 0 {
		return gcHeadroom{from: "off"}, nil
	}
	return gcHeadroom{bytes: n, from: "--gc-headroom"}, nil
}
