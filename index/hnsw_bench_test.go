package index

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func benchVectors(n, dim int) [][]float32 {
	return clusteredVectors(rand.New(rand.NewPCG(7, 7)), n, dim, 100, benchSpread)
}

// BenchmarkHNSWBuild measures parallel graph construction (vectors/s is
// n / (ns/op)).
func BenchmarkHNSWBuild(b *testing.B) {
	const n, dim = 20000, 384
	vecs := benchVectors(n, dim)
	b.ResetTimer()
	for b.Loop() {
		vs := newVectorSet(dim)
		slots := make([]uint32, n)
		for i, v := range vecs {
			slots[i] = vs.add(uint64(i), v)
		}
		newHNSW(vs).insert(slots)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "vectors/s")
}

// BenchmarkVectorSearch compares the scan and the graph at owner sizes
// around graphThreshold, for a plain top-10 and for the candidate pool a
// hybrid query asks for.
func BenchmarkVectorSearch(b *testing.B) {
	const dim = 384
	for _, n := range []int{2000, 5000, 10000, 20000, 50000} {
		vecs := benchVectors(n+100, dim)
		vs := newVectorSet(dim)
		slots := make([]uint32, n)
		for i, v := range vecs[:n] {
			slots[i] = vs.add(uint64(i), v)
		}
		g := newHNSW(vs)
		g.insert(slots)
		queries := vecs[n:]
		for _, k := range []int{10, minCandidates} {
			for name, s := range map[string]vectorSearcher{"exact": exactSearcher{vs}, "hnsw": g} {
				b.Run(fmt.Sprintf("n=%d/k=%d/%s", n, k, name), func(b *testing.B) {
					i := 0
					for b.Loop() {
						s.search(queries[i%len(queries)], k)
						i++
					}
				})
			}
		}
	}
}
