package index

import "testing"

// TestMapsNeeded: a server needs a memory map for each owner's snapshot
// and some for the rest of the process.
func TestMapsNeeded(t *testing.T) {
	for _, c := range []struct{ owners, limit, want int }{
		{100, 65530, 0},
		{60530, 65530, 0},
		{60531, 65530, 65531},
		{200000, 262144, 0},
		{200000, 0, 0}, // the limit unknown
	} {
		if got := MapsNeeded(c.owners, c.limit); got != c.want {
			t.Errorf("MapsNeeded(%d, %d) = %d, want %d", c.owners, c.limit, got, c.want)
		}
	}
	if n := MaxMapCount(); n <= 0 {
		t.Errorf("the kernel's limit read as %d", n)
	}
}
