//go:build !unix

package index

import "os"

// mapFile reads a file whole where memory mapping is not available; see
// the unix version.
func mapFile(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	return b, func() {}, err
}

// adviseWillNeed does nothing: the file was read whole.
func adviseWillNeed([]byte) error { return nil }
