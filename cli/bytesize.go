package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a size flag: a size such as 64MiB (see parseByteSize) or a
// number of bytes.
type byteSize int64

func (b *byteSize) String() string { return sizeLabel(int64(*b)) }
func (b *byteSize) Type() string   { return "size" }

func (b *byteSize) Set(v string) error {
	n, err := parseByteSize(v)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// parseByteSize reads a size such as "2GiB", "1500MiB", "512KiB" or a
// plain count of bytes; "0" or "" is 0.
func parseByteSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	orig, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || !(n >= 0) || n*float64(mult) > float64(1<<62) { // !(n >= 0): NaN too
		return 0, fmt.Errorf("%q is not a size such as 2GiB, 1500MiB or a number of bytes", orig)
	}
	return int64(n * float64(mult)), nil
}

// sizeLabel is n bytes as a reader takes them in: 1.5 GiB, 12.0 MiB, 512 B.
func sizeLabel(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
