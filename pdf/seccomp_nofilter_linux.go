//go:build !amd64 && !arm64

package pdf

import (
	"errors"
	"runtime"
)

// loadSeccompFilter has no filter for this architecture: the syscall
// numbers and the calling conventions to refuse are checked only on
// amd64 and arm64 (see seccomp_linux.go).
func loadSeccompFilter() error {
	return errors.New("no syscall filter is built for " + runtime.GOARCH)
}
