package admin

import (
	"strings"
	"testing"
)

// TestCheckMaps: doctor fails a data dir whose owners need more memory
// maps than the kernel allows, and says what to raise it to.
func TestCheckMaps(t *testing.T) {
	if f := checkMaps(100, 65530); f.Status != StatusOK {
		t.Errorf("100 owners under the default limit: %+v", f)
	}
	f := checkMaps(70000, 65530)
	if f.Status != StatusFail || !strings.Contains(f.Fix, "vm.max_map_count=131060") || !strings.Contains(f.Detail, "75000") {
		t.Errorf("70,000 owners under the default limit: %+v", f)
	}
	if f := checkMaps(70000, 0); f.Status != StatusOK || !strings.Contains(f.Detail, "unknown") {
		t.Errorf("the limit unknown: %+v", f)
	}
}
