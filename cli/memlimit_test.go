package cli

import (
	"math"
	"strings"
	"testing"
)

func TestResolveMemoryLimit(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	withEnv := func(k string) (string, bool) { return "3GiB", k == "GOMEMLIMIT" }
	vm := func() (uint64, string) { return 4 << 30, "machine" }
	unknown := func() (uint64, string) { return 0, "" }
	for _, c := range []struct {
		flag      string
		env       func(string) (string, bool)
		available func() (uint64, string)
		want      goMemoryLimit
	}{
		{"auto", noEnv, vm, goMemoryLimit{bytes: 3 << 30, from: "auto: three quarters of the machine's 4.0 GiB"}},
		{"auto", noEnv, func() (uint64, string) { return 2 << 30, "cgroup" }, goMemoryLimit{bytes: 1536 << 20, from: "auto: three quarters of the cgroup's 2.0 GiB"}},
		{" auto ", withEnv, vm, goMemoryLimit{keep: true, from: "GOMEMLIMIT=3GiB"}},
		{"auto", noEnv, unknown, goMemoryLimit{bytes: math.MaxInt64, from: "auto: the memory available is unknown"}},
		{"off", withEnv, vm, goMemoryLimit{bytes: math.MaxInt64, from: "off"}},
		{"0", noEnv, vm, goMemoryLimit{bytes: math.MaxInt64, from: "off"}},
		{"1500MiB", withEnv, vm, goMemoryLimit{bytes: 1500 << 20, from: "--memory-limit"}},
		{"", noEnv, vm, goMemoryLimit{bytes: 3 << 30, from: "auto: three quarters of the machine's 4.0 GiB"}},
	} {
		got, err := resolveMemoryLimit(c.flag, c.env, c.available)
		if err != nil || got != c.want {
			t.Errorf("resolveMemoryLimit(%q) = %+v, %v; want %+v", c.flag, got, err, c.want)
		}
	}
	_, err := resolveMemoryLimit("2GB", noEnv, vm)
	if err == nil || !strings.Contains(err.Error(), "auto or off") {
		t.Errorf("resolveMemoryLimit(2GB): err = %v, want one naming the sizes, auto and off", err)
	}
	for _, flag := range []string{"1", "63MiB", "NaN"} {
		if _, err := resolveMemoryLimit(flag, noEnv, vm); err == nil {
			t.Errorf("resolveMemoryLimit(%q) accepted", flag)
		}
	}
	if _, err := resolveMemoryLimit("1", noEnv, vm); err == nil || !strings.Contains(err.Error(), "below 64.0 MiB") {
		t.Errorf("resolveMemoryLimit(1): %v, want it to name the least", err)
	}
}
