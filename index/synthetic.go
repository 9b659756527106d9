package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// clusteredVectors returns n unit vectors of dim dimensions drawn around
// nClusters random centres. Real embeddings cluster by topic; uniform random
// vectors in high dimensions are nearly equidistant and would make any graph
// look worse (and exact search look better) than on real data.
func clusteredVectors(rng *rand.Rand, n, dim, nClusters int, spread float64) [][]float32 {
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

// syntheticVocabulary is the number of distinct words of synthetic text.
const syntheticVocabulary = 20000

// syntheticWords returns n words drawn from zipf: a few common words that
// most chunks share and a long tail of rare ones, as in real text.
func syntheticWords(zipf *rand.Zipf, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", zipf.Uint64())
	}
	return b.String()
}

// syntheticEntries returns n entries with IDs from first on, clustered
// vectors and 80 words of text each, so that both sides of a search work.
func syntheticEntries(rng *rand.Rand, first uint64, n, dim int) []Entry {
	zipf := rand.NewZipf(rng, 1.1, 1, syntheticVocabulary-1)
	vecs := clusteredVectors(rng, n, dim, 100, 1.0)
	es := make([]Entry, n)
	for i, v := range vecs {
		es[i] = Entry{ID: first + uint64(i), Vector: v, Text: syntheticWords(zipf, 80)}
	}
	return es
}

// syntheticQueries returns n hybrid queries for k hits, of three words
// each, drawn like syntheticEntries' text.
func syntheticQueries(rng *rand.Rand, n, dim, k int) []Query {
	zipf := rand.NewZipf(rng, 1.1, 1, syntheticVocabulary-1)
	qs := make([]Query, n)
	for i, v := range clusteredVectors(rng, n, dim, 100, 1.0) {
		qs[i] = Query{Vector: v, Text: syntheticWords(zipf, 3), K: k}
	}
	return qs
}
