//go:build !amd64

package index

import "unsafe"

func dotInt8(a, b []int8) int32 { return dotInt8Go(a, b) }

func prefetch(p unsafe.Pointer, n int) {}

func atLeast(xs []float32, floor float32) int { return atLeastGo(xs, floor) }
