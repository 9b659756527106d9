//go:build !unix

package index

import (
	"io"
	"os"
)

// mapFile reads an open file whole where memory mapping is not available;
// see the unix version.
func mapFile(f *os.File) ([]byte, func(), error) {
	b, err := io.ReadAll(f)
	return b, func() {}, err
}

// adviseWillNeed does nothing: the file was read whole.
func adviseWillNeed([]byte) error { return nil }
