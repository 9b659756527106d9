package indexbench

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestVecsFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	vecs := [][]float32{{1, 0, -0.5}, {0.25, 2, 3}}
	ids := [][]int32{{7, 1, 0}, {3, 2, 9}}
	if err := WriteFvecs(filepath.Join(dir, "v.fvecs"), vecs); err != nil {
		t.Fatal(err)
	}
	if err := WriteIvecs(filepath.Join(dir, "i.ivecs"), ids); err != nil {
		t.Fatal(err)
	}
	gotV, err := ReadFvecs(filepath.Join(dir, "v.fvecs"))
	if err != nil || !reflect.DeepEqual(gotV, vecs) {
		t.Errorf("fvecs read back %v, %v", gotV, err)
	}
	gotI, err := ReadIvecs(filepath.Join(dir, "i.ivecs"))
	if err != nil || !reflect.DeepEqual(gotI, ids) {
		t.Errorf("ivecs read back %v, %v", gotI, err)
	}

	// A truncated file and one whose rows change dimension are errors.
	b, _ := os.ReadFile(filepath.Join(dir, "v.fvecs"))
	os.WriteFile(filepath.Join(dir, "truncated.fvecs"), b[:len(b)-3], 0o600)
	if _, err := ReadFvecs(filepath.Join(dir, "truncated.fvecs")); err == nil {
		t.Error("a truncated file was read")
	}
	WriteFvecs(filepath.Join(dir, "ragged.fvecs"), [][]float32{{1, 2}, {1, 2, 3}})
	if _, err := ReadFvecs(filepath.Join(dir, "ragged.fvecs")); err == nil {
		t.Error("rows of two dimensions were read")
	}
}

func TestBenchOnFilesMatchesSynthetic(t *testing.T) {
	dir := t.TempDir()
	syn, err := Run(Config{N: 3000, Dim: 16, Queries: 50, ExportDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Run(Config{
		VectorsFile: filepath.Join(dir, "base.fvecs"), QueriesFile: filepath.Join(dir, "query.fvecs"),
		GroundTruthFile: filepath.Join(dir, "groundtruth.ivecs"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The graph is built again, in parallel on machines with cores to
	// spare, so recall may differ a little, not more.
	if files.N != 3000 || files.Dim != 16 || files.Queries != 50 || math.Abs(files.RecallAt10-syn.RecallAt10) > 0.05 {
		t.Errorf("on its own exported files the bench saw %+v; synthetic %+v", files, syn)
	}
}
