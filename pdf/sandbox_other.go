//go:build !linux

package pdf

import "runtime"

// enterSandbox has nothing to enter where there is neither Landlock nor
// seccomp: the worker keeps the server's file and network access (and
// only its environment is reduced, see workerEnviron).
func enterSandbox(workerOptions) sandboxReport {
	return sandboxReport{Unsupported: runtime.GOOS}
}
