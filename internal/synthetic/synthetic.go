// Package synthetic draws the clustered unit vectors that the index's
// tests and `docsift bench index` (bench/indexbench) measure the graph on.
package synthetic

import (
	"math"
	"math/rand/v2"
)

// ClusteredVectors returns n unit vectors of dim dimensions drawn around
// nClusters random centres, each at noise spread (relative to the
// centre's unit length) from its centre. Real embeddings cluster by
// topic; uniform random vectors in high dimensions are nearly equidistant
// and would make any graph look worse (and exact search look better) than
// on real data.
func ClusteredVectors(rng *rand.Rand, n, dim, nClusters int, spread float64) [][]float32 {
	centres := make([][]float64, nClusters)
	for c := range centres {
		centres[c] = make([]float64, dim)
		for i := range centres[c] {
			centres[c][i] = rng.NormFloat64()
		}
		normalize64(centres[c])
	}
	out := make([][]float32, n)
	noise := spread / math.Sqrt(float64(dim))
	buf := make([]float64, dim)
	for k := range out {
		c := centres[rng.IntN(nClusters)]
		for i := range buf {
			buf[i] = c[i] + noise*rng.NormFloat64()
		}
		normalize64(buf)
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(buf[i])
		}
		out[k] = v
	}
	return out
}

func normalize64(v []float64) {
	var s float64
	for _, x := range v {
		s += x * x
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] *= inv
	}
}
