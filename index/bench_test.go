package index

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestRunIndexBenchSmall(t *testing.T) {
	res, err := RunIndexBench(BenchConfig{N: 12000, Dim: 32, Queries: 100, Dir: t.TempDir()}, nil)
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
	if res.Ef != efSearchFor(12000) || res.EfConstruction != hnswEfConstructionLearned || res.Curve != nil {
		t.Errorf("ef %d, efConstruction %d, curve %v: not the index's own", res.Ef, res.EfConstruction, res.Curve)
	}
}

func TestRunIndexBenchSweep(t *testing.T) {
	res, err := RunIndexBench(BenchConfig{N: 6000, Dim: 32, Queries: 100, Dir: t.TempDir(),
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

// TestRunIndexBenchFull is the measurement (100k×384); it takes a
// minute or more, so it runs only when DOCSIFT_BENCH_FULL is set.
func TestRunIndexBenchFull(t *testing.T) {
	if os.Getenv("DOCSIFT_BENCH_FULL") == "" {
		t.Skip("set DOCSIFT_BENCH_FULL=1 to run the 100k×384 index benchmark")
	}
	res, err := RunIndexBench(BenchConfig{}, testWriter{t})
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
