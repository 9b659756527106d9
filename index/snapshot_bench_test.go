package index

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/docsift/docsift/llm"
)

// BenchmarkSearchSnapshot searches an owner as a restarted server does,
// read in place from a snapshot file, at the size a user has:
// DOCSIFT_BENCH_SNAPSHOT names the file (`docsift bench scale --dir DIR`
// leaves one in DIR/data/index). The queries are the vectors of random
// slots; vector is the graph walk of a hybrid query's candidate pool, read
// the load of the file (with the page cache warm), read-after-preview its
// load once a preview has checked it (ReadSnapshotAfter). DOCSIFT_BENCH_QUERIES,
// when set, names a BEIR queries.jsonl for lexical: BM25's side of the
// same pool (`docsift bench scale --dir DIR` leaves the queries it ran in
// DIR/queries.jsonl), then again after 1,000 deletions, and with one
// more before each query; and for vector-recall, the graph walk of those
// queries' built-in embeddings, with its recall@10; and for hybrid, whole
// searches of those queries and embeddings.
func BenchmarkSearchSnapshot(b *testing.B) {
	path := os.Getenv("DOCSIFT_BENCH_SNAPSHOT")
	if path == "" {
		b.Skip("DOCSIFT_BENCH_SNAPSHOT names no snapshot to search")
	}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := testOpts.ReadSnapshot(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	x, _, err := testOpts.ReadSnapshot(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("read-after-preview", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := testOpts.ReadSnapshotAfter(path, x); err != nil {
				b.Fatal(err)
			}
		}
	})
	v := x.current.Load()
	rng := rand.New(rand.NewPCG(1, 1))
	queries := make([][]float32, 1000)
	for i := range queries {
		s := uint32(rng.IntN(int(v.n)))
		p, off := pageOf(s)
		pg := v.pages[p]
		queries[i] = slices.Clone(pg.vecs[off*pg.dim : (off+1)*pg.dim])
	}
	b.Run("vector", func(b *testing.B) {
		i := 0
		for b.Loop() {
			v.searchVectors(queries[i%len(queries)], minCandidates, 0)
			i++
		}
	})
	lines, err := os.ReadFile(os.Getenv("DOCSIFT_BENCH_QUERIES"))
	if err != nil {
		return
	}
	var terms [][]queryTerm
	var texts []string
	for _, line := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var q struct{ Text string }
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			b.Fatalf("%s: %v", os.Getenv("DOCSIFT_BENCH_QUERIES"), err)
		}
		terms = append(terms, v.queryTerms(q.Text))
		texts = append(texts, q.Text)
	}
	b.Run("vector-recall", func(b *testing.B) { benchmarkRecall(b, v, texts) })
	b.Run("hybrid", func(b *testing.B) { benchmarkHybrid(b, x, texts) })
	lexical := func(b *testing.B) {
		v := x.current.Load()
		i := 0
		for b.Loop() {
			v.lexical(terms[i%len(terms)], minCandidates, nil).release()
			i++
		}
	}
	b.Run("lexical", lexical)
	// An owner with a few deletions since its last compaction, as most
	// have: its searches skip the deleted docs in every list.
	for range 1000 {
		x.Delete(v.pages.id(uint32(rng.IntN(int(v.n)))))
	}
	b.Run("lexical-deleted", lexical)
	// An owner written to between queries: each reads a new version.
	b.Run("lexical-changing", func(b *testing.B) {
		i := 0
		for b.Loop() {
			x.Delete(v.pages.id(uint32(rng.IntN(int(v.n)))))
			x.current.Load().lexical(terms[i%len(terms)], minCandidates, nil).release()
			i++
		}
	})
}

// benchmarkRecall times the graph walk of a hybrid query's candidate pool
// for the built-in embeddings of (up to 100 of) texts, as a server embeds
// queries for an owner of that embedder, and reports the recall@10 of the
// pool's first ten against the exact ten nearest (found in one pass over
// every vector; a doc scoring the same as the tenth counts as found).
func benchmarkRecall(b *testing.B, v *view, texts []string) {
	emb := llm.NewBuiltin()
	var qs [][]float32
	for _, text := range texts[:min(100, len(texts))] {
		q, err := emb.EmbedQuery(context.Background(), text)
		if err != nil {
			b.Fatal(err)
		}
		qs = append(qs, q)
	}
	exact := make([]*topK, len(qs))
	for i := range exact {
		exact[i] = newTopK(10)
	}
	for s := range v.n {
		if v.alive(s) {
			for i, q := range qs {
				exact[i].push(s, v.pages.dot(q, s))
			}
		}
	}
	found, want := 0, 0
	for i, q := range qs {
		best := exact[i].sorted()
		tenth := best[len(best)-1].score
		got := v.searchVectors(q, minCandidates, 0)
		for _, r := range got[:min(len(best), len(got))] {
			if v.pages.dot(q, r.slot) >= tenth {
				found++
			}
		}
		want += len(best)
	}
	i := 0
	for b.Loop() {
		v.searchVectors(qs[i%len(qs)], minCandidates, 0)
		i++
	}
	b.ReportMetric(float64(found)/float64(want), "recall@10")
}

// benchmarkHybrid times whole searches (the ten best) of texts with their
// built-in embeddings, as a server runs them for an owner of that
// embedder, and reports the share of their top ten that a graph walk 25
// times as wide on the vector side returns too: what the narrow walk of
// tuning.hashedWalk costs the results.
func benchmarkHybrid(b *testing.B, x *OwnerIndex, texts []string) {
	emb := llm.NewBuiltin()
	queries := make([]Query, len(texts))
	for i, text := range texts {
		vec, err := emb.EmbedQuery(context.Background(), text)
		if err != nil {
			b.Fatal(err)
		}
		queries[i] = Query{Text: text, Vector: vec, K: 10}
	}
	search := func() [][]Hit {
		hits := make([][]Hit, len(queries))
		for i, q := range queries {
			hits[i] = x.Search(q)
		}
		return hits
	}
	narrow := search()
	walk := x.tuning.hashedWalk
	x.tuning.hashedWalk *= 25
	wide := search()
	x.tuning.hashedWalk = walk
	kept, all := 0, 0
	for i := range wide {
		for _, w := range wide[i] {
			if slices.ContainsFunc(narrow[i], func(h Hit) bool { return h.ID == w.ID }) {
				kept++
			}
		}
		all += len(wide[i])
	}
	i := 0
	for b.Loop() {
		x.Search(queries[i%len(queries)])
		i++
	}
	b.ReportMetric(float64(kept)/float64(max(all, 1)), "top10-kept")
}
