package admin

import (
	"strings"
	"testing"
)

// TestCheckMaps: doctor warns, never fails, when more snapshots are large
// enough to be mapped than the server holds maps for, and says what to
// raise the kernel's limit to.
func TestCheckMaps(t *testing.T) {
	if f := checkMaps(100, 65530); f.Status != StatusOK {
		t.Errorf("100 large snapshots under the default limit: %+v", f)
	}
	f := checkMaps(40000, 65530)
	if f.Status != StatusWarn || !strings.Contains(f.Fix, "vm.max_map_count=100000") || !strings.Contains(f.Detail, "30265") {
		t.Errorf("40,000 large snapshots under the default limit: %+v", f)
	}
	if f := checkMaps(500, 0); f.Status != StatusOK {
		t.Errorf("the limit unknown: %+v", f)
	}
}
