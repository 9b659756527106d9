//go:build !linux

package index

import "errors"

// mapScratch is only implemented on Linux; elsewhere vectors stay on the
// heap.
func mapScratch(dir string, n int) ([]float32, func(), error) {
	return nil, nil, errors.New("map vectors: not supported on this system")
}

// discardScratch is never called where mapScratch fails.
func discardScratch([]float32) bool { return false }
