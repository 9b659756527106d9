//go:build !linux

package index

import "errors"

// populate is not available here: pages are mapped as searches first
// touch them.
func populate([]byte) error { return errors.ErrUnsupported }
