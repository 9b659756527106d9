package index

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAVX2 selects the vector kernels of dotInt8 and atLeast; without it
// their Go loops run (quant.go's dot product about 14 times slower at 384
// dimensions).
var hasAVX2 = cpu.X86.HasAVX2

//go:noescape
func dotInt8AVX2(a, b *int8, n int) int32

// prefetch asks the CPU to bring the n > 0 bytes at p into its caches
// and returns at once. A graph walk reads codes scattered over the whole
// index, each a miss to memory once the index outgrows the caches: asking
// for all of a node's new neighbours before scoring the first overlaps
// their waits (half the time of a walk over a snapshot of 550,000 chunks,
// BenchmarkSearchSnapshot).
//
//go:noescape
func prefetch(p unsafe.Pointer, n int)

// dotInt8 is the dot product of two equally long int8 vectors: 16 codes
// at a time in AVX2 registers, the rest in Go.
func dotInt8(a, b []int8) int32 {
	b = b[:len(a)]
	n := len(a) &^ 15
	if !hasAVX2 || n == 0 {
		return dotInt8Go(a, b)
	}
	return dotInt8AVX2(&a[0], &b[0], n) + dotInt8Go(a[n:], b[n:])
}

//go:noescape
func atLeastAVX2(xs *float32, n int, floor float32) int

// atLeast returns the index of the first of xs that is at least floor, or
// len(xs): eight at a time in AVX2 registers, the rest in Go.
func atLeast(xs []float32, floor float32) int {
	n := len(xs) &^ 7
	if !hasAVX2 || n == 0 {
		return atLeastGo(xs, floor)
	}
	if i := atLeastAVX2(&xs[0], n, floor); i < n {
		return i
	}
	return n + atLeastGo(xs[n:], floor)
}
