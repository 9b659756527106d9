package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func benchVectors(n, dim int) [][]float32 {
	return clusteredVectors(rand.New(rand.NewPCG(7, 7)), n, dim, 100, 1.0)
}

// BenchmarkHNSWBuild measures graph construction as an insert runs it,
// with GOMAXPROCS-1 workers (vectors/s is n / (ns/op)).
func BenchmarkHNSWBuild(b *testing.B) {
	const n, dim = 20000, 384
	vecs := benchVectors(n, dim)
	b.ResetTimer()
	for b.Loop() {
		gen := newGeneration(dim, newHNSW(hnswSeed, hnswEfConstruction), nil)
		slots := make([]uint32, n)
		for i, v := range vecs {
			slots[i] = gen.appendSlot(uint64(i), v, 0)
		}
		gen.graph.insert(gen.scope(), slots)
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
		views := map[string]*view{}
		for name, graphFrom := range map[string]int{"exact": math.MaxInt, "hnsw": 0} {
			x := testOpts.New("m", dim)
			x.graphFrom = graphFrom
			if err := x.Add(entries(vecs[:n], 0)...); err != nil {
				b.Fatal(err)
			}
			views[name] = x.current.Load()
		}
		queries := vecs[n:]
		for _, k := range []int{10, minCandidates} {
			for name, v := range views {
				b.Run(fmt.Sprintf("n=%d/k=%d/%s", n, k, name), func(b *testing.B) {
					i := 0
					for b.Loop() {
						v.searchVectors(queries[i%len(queries)], k, 0)
						i++
					}
				})
			}
		}
	}
}
