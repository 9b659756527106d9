package eval

import (
	"math"
	"sort"
)

// Scores are one query's metrics at a cut-off k.
type Scores struct {
	NDCG, Recall, MRR float64
}

// Score computes nDCG@k, recall@k and MRR@k of a ranking against graded
// judgments, as the BM25 reference does: gain is the graded relevance, the
// discount log2(rank+1), the ideal DCG is built from every judged-relevant
// document, and recall counts documents with relevance above 0. It returns
// false when the query has no relevant document (such queries are skipped).
func Score(ranked []string, rels map[string]int, k int) (Scores, bool) {
	var ideal []int
	relevant := map[string]bool{}
	for d, r := range rels {
		if r > 0 {
			relevant[d] = true
			ideal = append(ideal, r)
		}
	}
	if len(relevant) == 0 {
		return Scores{}, false
	}
	ranked = ranked[:min(k, len(ranked))]
	var dcg, idcg float64
	var s Scores
	found := 0
	for i, d := range ranked {
		dcg += float64(rels[d]) / math.Log2(float64(i+2))
		if relevant[d] {
			found++
			if s.MRR == 0 {
				s.MRR = 1 / float64(i+1)
			}
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ideal)))
	for i, r := range ideal[:min(k, len(ideal))] {
		idcg += float64(r) / math.Log2(float64(i+2))
	}
	s.NDCG = dcg / idcg
	s.Recall = float64(found) / float64(len(relevant))
	return s, true
}
