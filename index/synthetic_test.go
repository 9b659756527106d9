package index

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/docsift/docsift/internal/synthetic"
)

// clusteredVectors is synthetic.ClusteredVectors: vectors clustered as
// real embeddings are.
func clusteredVectors(rng *rand.Rand, n, dim, nClusters int, spread float64) [][]float32 {
	return synthetic.ClusteredVectors(rng, n, dim, nClusters, spread)
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
