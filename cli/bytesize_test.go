package cli

import "testing"

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "2GiB": 2 << 30, "1500MiB": 1500 << 20, " 1.5 KiB ": 1536, "4096": 4096, "10B": 10} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"2GB", "-1MiB", "lots", "GiB", "1e30TiB", "NaN", "Inf", "NaNMiB"} {
		if _, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) accepted", in)
		}
	}
}
