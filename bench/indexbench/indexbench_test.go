package indexbench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// ownEfConstruction and ownEf are the index's own candidate lists for a
// learned model's 12,000 vectors (index/hnsw.go: hnswEfConstructionLearned,
// efSearchFor).
const ownEfConstruction, ownEf = 200, 160

func TestRunSmall(t *testing.T) {
	res, err := Run(Config{N: 12000, Dim: 32, Queries: 100, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.RecallAt10 < 0.95 {
		t.Errorf("recall@10 %.3f < 0.95", res.RecallAt10)
	}
	if res.SnapshotLoadSpeedup <= 1 || res.BytesPerVector <= 0 {
		t.Errorf("implausible result %+v", res)
	}
	// By default the bench measures the index as a learned model's
	// vectors get it, and says with which candidate lists.
	if res.Ef != ownEf || res.EfConstruction != ownEfConstruction || res.Curve != nil {
		t.Errorf("ef %d, efConstruction %d, curve %v: not the index's own", res.Ef, res.EfConstruction, res.Curve)
	}
}

func TestRunSweep(t *testing.T) {
	res, err := Run(Config{N: 6000, Dim: 32, Queries: 100, Dir: t.TempDir(),
		EfConstruction: 24, Ef: []int{10, 200}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.EfConstruction != 24 || len(res.Curve) != 2 || res.Curve[0].Ef != 10 || res.Curve[1].Ef != 200 {
		t.Fatalf("sweep not as asked: efConstruction %d, curve %+v", res.EfConstruction, res.Curve)
	}
	if res.Ef != 10 || res.RecallAt10 != res.Curve[0].RecallAt10 {
		t.Errorf("headline is not the first candidate list: ef %d, recall %.3f", res.Ef, res.RecallAt10)
	}
	// A list of 10 for 10 neighbours misses some that one of 200 finds.
	if lo, hi := res.Curve[0].RecallAt10, res.Curve[1].RecallAt10; !(lo < hi) || hi < 0.95 {
		t.Errorf("recall@10 %.3f at ef 10 and %.3f at ef 200", lo, hi)
	}
}

// TestMappedVectorsLeaveTheHeap measures the heap per vector with the
// float vectors in mapped files and on the heap, in the same run: mapping
// must take at least most of the floats' 4·dim bytes off the heap, at the
// same recall.
func TestMappedVectorsLeaveTheHeap(t *testing.T) {
	const dim = 64
	cfg := Config{N: 6000, Dim: dim, Queries: 100, Dir: t.TempDir(), HeapVectors: true}
	onHeap, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HeapVectors, cfg.Dir = false, t.TempDir()
	mapped, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("heap bytes/vector: %.0f with floats on the heap, %.0f mapped", onHeap.BytesPerVector, mapped.BytesPerVector)
	if saved := onHeap.BytesPerVector - mapped.BytesPerVector; saved < 0.8*4*dim {
		t.Errorf("mapping saved %.0f heap bytes per vector, want ≥ %.0f", saved, 0.8*4*dim)
	}
	if mapped.RecallAt10 < 0.95 || onHeap.RecallAt10 < 0.95 {
		t.Errorf("recall@10 %.3f mapped, %.3f on the heap, want ≥ 0.95", mapped.RecallAt10, onHeap.RecallAt10)
	}
}

// TestRunFull is the measurement (100k×384); it takes a
// minute or more, so it runs only when DOCSIFT_BENCH_FULL is set.
func TestRunFull(t *testing.T) {
	if os.Getenv("DOCSIFT_BENCH_FULL") == "" {
		t.Skip("set DOCSIFT_BENCH_FULL=1 to run the 100k×384 index benchmark")
	}
	res, err := Run(Config{}, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", b)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
