package index

import (
	"cmp"
	"math"
	"slices"
)

// Scalar quantisation. The graph's walks and the scans compare a query
// with thousands of stored vectors; they read int8 codes, a quarter of the
// float32 vectors' bytes, and the best candidates they find are re-scored
// exactly with the float32 vectors (see rescore), so ranking and scores
// stay those of the float vectors.
//
// A vector's codes are round(x/scale) with one scale per vector,
// scale = max|x|/127. The other common choice, a minimum and maximum per
// dimension over the owner's vectors, needs the vectors before it can
// code the first one, and an owner grows one batch at a time: its ranges
// would move, and every code would have to be rewritten, which slots never
// are once published (see slots.go). A per-vector scale needs no training,
// codes a vector once, and suits unit vectors, whose components share one
// range; with 384 dimensions the error in a dot product is well under 1%
// of its range, which the re-scoring of rescoreMin candidates absorbs.

// rescoreMin is the fewest candidates, found by their codes, that a scan
// re-scores exactly before keeping the best k. The graph re-scores its
// whole candidate list (efSearchFor), which is larger.
const rescoreMin = 64

// code is a quantised vector: the dot product of two codes, times both
// scales, approximates the dot product of their vectors.
type code struct {
	c     []int8
	scale float32
}

// quantise writes v's codes into c (len(v) long) and returns v's scale.
func quantise(c []int8, v []float32) float32 {
	// The builtin max orders NaNs and signed zeros, at a cost of several
	// branches per component; the largest |f| needs only a compare that
	// is rarely true.
	var m float32
	for _, f := range v {
		if a := math.Float32frombits(math.Float32bits(f) &^ (1 << 31)); a > m {
			m = a
		}
	}
	if m == 0 {
		clear(c)
		return 0
	}
	// f·inv lies in [-127, 127]: shifted by 128.5 it is positive, so
	// truncating rounds it to nearest, without a branch per component
	// (one on the sign costs a misprediction every other time).
	inv := 127 / m
	for i, f := range v {
		c[i] = int8(int32(f*inv+128.5) - 128)
	}
	return m / 127
}

// approx is the approximate dot product of two codes.
func (a code) approx(b code) float32 {
	return a.scale * b.scale * float32(dotInt8(a.c, b.c))
}

// dotInt8Go is the dot product of two equally long int8 vectors, for
// machines without a vector kernel (see dot_amd64.go) and for the tails it
// leaves. Each product fits in 15 bits, so an int32 sum cannot overflow
// below 2^16 dimensions (maxSnapshotDim).
func dotInt8Go(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// rescore replaces the approximate scores of cands with exact ones
// against q and returns the best k, best first, ties broken by slot.
// cands is reordered in place.
func rescore(ps pages, q []float32, cands []scored, k int) []scored {
	for i := range cands {
		cands[i].score = ps.dot(q, cands[i].slot)
	}
	slices.SortFunc(cands, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.slot, b.slot)
	})
	return cands[:min(k, len(cands))]
}
