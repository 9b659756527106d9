//go:build !linux

package pdf

// limitWorkerMemory is a no-op where RLIMIT_AS is not dependable.
func limitWorkerMemory() {}
