package cli

import (
	"math"
	"strings"
	"testing"
)

func TestResolveGCHeadroom(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	withGOGC := func(k string) (string, bool) { return "200", k == "GOGC" }
	for _, c := range []struct {
		flag  string
		env   func(string) (string, bool)
		limit int64
		want  gcHeadroom
	}{
		{"auto", noEnv, math.MaxInt64, gcHeadroom{bytes: 256 << 20, from: "auto"}},
		{"", noEnv, 3 << 30, gcHeadroom{bytes: 256 << 20, from: "auto"}},
		{" auto ", noEnv, 1 << 30, gcHeadroom{bytes: 128 << 20, from: "auto: an eighth of the memory limit"}},
		{"auto", withGOGC, math.MaxInt64, gcHeadroom{from: "GOGC=200"}},
		{"off", noEnv, math.MaxInt64, gcHeadroom{from: "off"}},
		{"0", noEnv, math.MaxInt64, gcHeadroom{from: "off"}},
		{"64MiB", withGOGC, 1 << 30, gcHeadroom{bytes: 64 << 20, from: "--gc-headroom"}},
	} {
		got, err := resolveGCHeadroom(c.flag, c.env, c.limit)
		if err != nil || got != c.want {
			t.Errorf("resolveGCHeadroom(%q, limit %d) = %+v, %v; want %+v", c.flag, c.limit, got, err, c.want)
		}
	}
	for _, flag := range []string{"lots", "-5MiB", "2GB"} {
		_, err := resolveGCHeadroom(flag, noEnv, math.MaxInt64)
		if err == nil || !strings.Contains(err.Error(), "auto or off") {
			t.Errorf("resolveGCHeadroom(%q): err = %v, want one naming the sizes, auto and off", flag, err)
		}
	}
}
