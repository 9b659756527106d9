package eval

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The judged sets in testdata/lang are this project's own: a few dozen
// passages per language on everyday topics (tenancy, health, cooking,
// travel, computers, history), each query written in other words and
// other forms than its passage's (plural for singular, a compound's parts,
// accents left out), as a user types them. German, French and Spanish
// check Snowball stemming and accent folding, Russian Cyrillic, Arabic
// normalisation and light stemming, Chinese character bigrams; the
// German set has titles, searched as a field. They are small and were
// never used to choose a parameter: a check that nothing is broken for a
// language, not a benchmark.
const langDir = "testdata/lang"

// langBar is the nDCG@10 every set must reach; the engine must also not
// fall behind the BM25 reference (SQLite FTS5, porter and unicode61) on
// any of them, and beat it on average.
const langBar = 0.85

func TestLanguagesAgainstBM25(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run the BM25 reference: %v", err)
	}
	const reference = "../../shared/bench/bm25_baseline.py"
	if _, err := os.Stat(reference); err != nil {
		t.Skipf("BM25 reference not found at %s (%v)", reference, err)
	}
	sets, err := os.ReadDir(langDir)
	if err != nil {
		t.Fatal(err)
	}
	var ours, theirs float64
	for _, set := range sets {
		dir := filepath.Join(langDir, set.Name())
		res, err := Run(context.Background(), Config{
			Corpus:  filepath.Join(dir, "corpus.jsonl"),
			Queries: filepath.Join(dir, "queries.jsonl"),
			Qrels:   filepath.Join(dir, "qrels", "test.tsv"),
		})
		if err != nil {
			t.Fatalf("%s: %v", set.Name(), err)
		}
		out, err := exec.Command(python, reference, dir, "--json").Output()
		if err != nil {
			t.Fatalf("%s: BM25 reference: %v", set.Name(), err)
		}
		var bm25 struct {
			NDCG    float64 `json:"ndcg_at_10"`
			Queries int     `json:"queries"`
		}
		if err := json.Unmarshal(out, &bm25); err != nil {
			t.Fatalf("%s: BM25 reference printed %q: %v", set.Name(), out, err)
		}
		t.Logf("%s: docsift nDCG@10 %.4f, BM25 %.4f (%d queries)", set.Name(), res.NDCG, bm25.NDCG, res.Queries)
		if res.Queries != bm25.Queries {
			t.Errorf("%s: %d queries scored, the reference %d", set.Name(), res.Queries, bm25.Queries)
		}
		if res.NDCG < langBar || res.NDCG < bm25.NDCG {
			t.Errorf("%s: nDCG@10 %.4f, want at least %.2f and BM25's %.4f", set.Name(), res.NDCG, langBar, bm25.NDCG)
		}
		ours += res.NDCG
		theirs += bm25.NDCG
	}
	if ours <= theirs {
		t.Errorf("on average docsift (%.4f) does not beat BM25 (%.4f)", ours/float64(len(sets)), theirs/float64(len(sets)))
	}
}
