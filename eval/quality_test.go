package eval

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// msmarcoDir is the shared MS MARCO sample, read in place.
const msmarcoDir = "../../shared/data/msmarco-5k"

// qualityBar is the nDCG@10 the built-in mode must reach on msmarco-5k
// (SQLite FTS5 BM25 scores 0.7205 there).
const qualityBar = 0.75

// TestBuiltinQualityOnMSMARCO guards retrieval quality: the built-in mode
// keeps its bar on the shared sample and beats the BM25 reference computed
// in the same run.
func TestBuiltinQualityOnMSMARCO(t *testing.T) {
	if _, err := os.Stat(msmarcoDir); err != nil {
		t.Skipf("shared MS MARCO sample not found at %s (%v)", msmarcoDir, err)
	}
	res, err := Run(context.Background(), Config{
		Corpus:  filepath.Join(msmarcoDir, "corpus.jsonl"),
		Queries: filepath.Join(msmarcoDir, "queries.jsonl"),
		Qrels:   filepath.Join(msmarcoDir, "qrels", "test.tsv"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("docsift built-in: nDCG@10 %.4f recall@10 %.4f MRR@10 %.4f over %d queries", res.NDCG, res.Recall, res.MRR, res.Queries)
	if res.Queries != 43 {
		t.Errorf("scored %d queries, want the 43 with a relevant judgment", res.Queries)
	}
	if res.NDCG < qualityBar {
		t.Errorf("nDCG@10 %.4f is under the bar of %.2f", res.NDCG, qualityBar)
	}

	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run the BM25 reference: %v", err)
	}
	out, err := exec.Command(python, "../../shared/bench/bm25_baseline.py", msmarcoDir, "--json").Output()
	if err != nil {
		t.Fatalf("BM25 reference: %v", err)
	}
	var bm25 struct {
		NDCG    float64 `json:"ndcg_at_10"`
		Queries int     `json:"queries"`
	}
	if err := json.Unmarshal(out, &bm25); err != nil {
		t.Fatalf("BM25 reference printed %q: %v", out, err)
	}
	t.Logf("BM25 reference: nDCG@10 %.4f over %d queries", bm25.NDCG, bm25.Queries)
	if bm25.Queries != res.Queries || res.NDCG <= bm25.NDCG {
		t.Errorf("docsift %.4f over %d queries does not beat BM25 %.4f over %d", res.NDCG, res.Queries, bm25.NDCG, bm25.Queries)
	}
}
