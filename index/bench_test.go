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
