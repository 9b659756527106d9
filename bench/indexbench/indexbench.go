// Package indexbench is `docsift bench index`: the vector index's recall,
// search latency, build rate, memory and snapshot load, on clustered
// synthetic vectors or on .fvecs files (fvecs.go), which it can also
// write, to run the same data through other libraries (bench/ann_compare.py).
package indexbench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/internal/synthetic"
	"github.com/viterin/vek/vek32"
)

// Defaults of Run; `docsift bench index` shows them as its flags'.
const (
	DefaultN        = 100000
	DefaultDim      = 384
	DefaultQueries  = 1000
	defaultClusters = 100
	// spread is the noise around a cluster centre relative to the
	// centre's unit length: enough that neighbours within a cluster are
	// not trivially separated, as with real topic clusters.
	spread  = 1.0
	recallK = 10
)

// Config sets up Run. Zero fields take the defaults above.
type Config struct {
	N        int    // vectors in the index
	Dim      int    // dimensions
	Queries  int    // queries timed and scored
	Clusters int    // clusters the synthetic vectors are drawn around
	Seed     uint64 // data generator seed
	Dir      string // where to write the snapshot and map the vectors; "" = a temp dir
	// HeapVectors keeps the float32 vectors on the heap instead of in
	// mapped files in Dir (see VectorFiles), to compare the two.
	HeapVectors bool
	// EfConstruction, when set, is the graph's insert candidate list
	// instead of the index's own for a learned model's vectors; Ef, when
	// set, the search candidate lists to measure, one pass of the
	// queries each (the first is the result's, the rest its Curve).
	EfConstruction int
	Ef             []int

	// VectorsFile and QueriesFile, when set, are .fvecs files to use
	// instead of synthetic vectors (they are scaled to unit length: the
	// index ranks by dot product, so cosine). GroundTruthFile, optional,
	// is an .ivecs of each query's exact neighbours by row number;
	// without it they are computed by brute force.
	VectorsFile, QueriesFile, GroundTruthFile string
	// ExportDir, when set, receives the vectors, queries and ground truth
	// as base.fvecs, query.fvecs and groundtruth.ivecs, for running the
	// same data through other libraries.
	ExportDir string
}

// Result is what Run measured.
type Result struct {
	N                     int     `json:"n"`
	Dim                   int     `json:"dim"`
	Queries               int     `json:"queries"`
	RecallAt10            float64 `json:"recall_at_10"`
	SearchP50Ms           float64 `json:"search_p50_ms"`
	SearchP99Ms           float64 `json:"search_p99_ms"`
	SearchQPS             float64 `json:"search_qps"` // single thread
	BuildSeconds          float64 `json:"build_seconds"`
	BuildVectorsPerSecond float64 `json:"build_vectors_per_second"`
	SnapshotWriteSeconds  float64 `json:"snapshot_write_seconds"`
	SnapshotLoadSeconds   float64 `json:"snapshot_load_seconds"`
	SnapshotLoadSpeedup   float64 `json:"snapshot_load_speedup"`
	SnapshotBytes         int64   `json:"snapshot_bytes"`
	BytesPerVector        float64 `json:"bytes_per_vector"`
	// Ef is the search candidate list of the figures above; Curve has the
	// recall and speed of every candidate list measured, Ef's first.
	Ef             int     `json:"ef"`
	EfConstruction int     `json:"ef_construction"`
	Curve          []Point `json:"curve,omitempty"`
}

// Point is recall and single-thread speed at one search candidate
// list.
type Point struct {
	Ef          int     `json:"ef"`
	RecallAt10  float64 `json:"recall_at_10"`
	SearchP50Ms float64 `json:"search_p50_ms"`
	SearchP99Ms float64 `json:"search_p99_ms"`
	SearchQPS   float64 `json:"search_qps"`
}

// Run measures the vector index on clustered synthetic unit vectors (or
// cfg's files): it computes exact top-10 ground truth by brute force, builds an
// OwnerIndex through Add (as ingestion does), times single-threaded
// searches, and compares loading a snapshot with rebuilding. Progress lines
// go to progress (nil for none).
func Run(cfg Config, progress io.Writer) (Result, error) {
	if cfg.N == 0 {
		cfg.N = DefaultN
	}
	if cfg.Dim == 0 {
		cfg.Dim = DefaultDim
	}
	if cfg.Queries == 0 {
		cfg.Queries = DefaultQueries
	}
	if cfg.Clusters == 0 {
		cfg.Clusters = defaultClusters
	}
	if cfg.N < 1 || cfg.Dim < 1 || cfg.Queries < 1 {
		return Result{}, errors.New("indexbench: n, dim and queries must be positive")
	}
	if progress == nil {
		progress = io.Discard
	}
	// The heap is measured from before the data exists: the input vectors
	// are dead once added (the index copies them), so a baseline taken
	// after them would subtract them from the index's own size.
	baseline := heapInUse()
	vecs, queries, truth, err := data(&cfg, progress)
	if err != nil {
		return Result{}, err
	}
	res := Result{N: cfg.N, Dim: cfg.Dim, Queries: cfg.Queries}

	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "docsift-bench-")
		if err != nil {
			return res, fmt.Errorf("indexbench: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	opts := index.Options{EfConstruction: cfg.EfConstruction}
	if !cfg.HeapVectors {
		if opts.Vectors, err = index.NewVectorFiles(dir); err != nil {
			return res, fmt.Errorf("indexbench: %w", err)
		}
	}

	entries := make([]index.Entry, cfg.N)
	for i, v := range vecs {
		entries[i] = index.Entry{ID: uint64(i), Vector: v}
	}
	fmt.Fprintf(progress, "building index of %d vectors\n", cfg.N)
	x := opts.New("bench", cfg.Dim)
	start := time.Now()
	if err := x.Add(entries...); err != nil {
		return res, fmt.Errorf("indexbench: %w", err)
	}
	build := time.Since(start)
	// entries and vecs are dead from here (the index copied the vectors),
	// so heapInUse's collection frees them.
	// What stays besides the index: the queries and their ground truth.
	kept := uint64(len(queries)*cfg.Dim*4 + len(truth)*recallK*4)
	res.BytesPerVector = float64(heapInUse()-baseline-kept) / float64(cfg.N)
	res.BuildSeconds = build.Seconds()
	res.BuildVectorsPerSecond = float64(cfg.N) / build.Seconds()
	fmt.Fprintf(progress, "built in %.1fs (%.0f vectors/s)\n", res.BuildSeconds, res.BuildVectorsPerSecond)

	res.EfConstruction = x.EfConstruction() // as built, not as asked
	efs := cfg.Ef
	if len(efs) == 0 {
		efs = []int{0} // the index's own
	}
	for _, ef := range efs {
		fmt.Fprintf(progress, "searching %d queries, one thread\n", cfg.Queries)
		p := searchPass(x, queries, truth, ef)
		fmt.Fprintf(progress, "ef %d: recall@10 %.4f, %.0f queries/s\n", p.Ef, p.RecallAt10, p.SearchQPS)
		res.Curve = append(res.Curve, p)
	}
	first := res.Curve[0]
	res.Ef, res.RecallAt10, res.SearchQPS = first.Ef, first.RecallAt10, first.SearchQPS
	res.SearchP50Ms, res.SearchP99Ms = first.SearchP50Ms, first.SearchP99Ms
	if len(res.Curve) == 1 {
		res.Curve = nil
	}

	path := filepath.Join(dir, "bench.idx")
	fmt.Fprintf(progress, "writing and loading snapshot %s\n", path)
	start = time.Now()
	if err := x.WriteSnapshot(path, uint64(cfg.N)); err != nil {
		return res, fmt.Errorf("indexbench: %w", err)
	}
	res.SnapshotWriteSeconds = time.Since(start).Seconds()
	if st, err := os.Stat(path); err == nil {
		res.SnapshotBytes = st.Size()
	}
	x = nil
	runtime.GC()
	start = time.Now()
	y, _, err := opts.ReadSnapshot(path)
	if err != nil {
		return res, fmt.Errorf("indexbench: %w", err)
	}
	load := time.Since(start)
	res.SnapshotLoadSeconds = load.Seconds()
	res.SnapshotLoadSpeedup = build.Seconds() / load.Seconds()
	if y.Len() != cfg.N {
		return res, fmt.Errorf("indexbench: loaded %d vectors, wrote %d", y.Len(), cfg.N)
	}
	fmt.Fprintf(progress, "recall@10 %.4f, p50 %.3f ms, load %.2fs (%.0fx faster than build)\n",
		res.RecallAt10, res.SearchP50Ms, res.SnapshotLoadSeconds, res.SnapshotLoadSpeedup)
	return res, nil
}

// searchBench times queries one at a time through x's search of vectors
// alone, the graph walking a candidate list of ef (0: its own), and
// scores each hit list against truth.
func searchPass(x *index.OwnerIndex, queries [][]float32, truth [][]uint32, ef int) Point {
	if kept := x.SetEfSearch(ef); kept != 0 {
		ef = kept
		defer x.SetEfSearch(0)
	}
	lat := make([]time.Duration, len(queries))
	found := 0
	start := time.Now()
	for i, q := range queries {
		t := time.Now()
		hits := x.Search(index.Query{Vector: q, K: recallK})
		lat[i] = time.Since(t)
		for _, h := range hits {
			if slices.Contains(truth[i], uint32(h.ID)) {
				found++
			}
		}
	}
	p := Point{Ef: ef, SearchQPS: float64(len(queries)) / time.Since(start).Seconds()}
	p.RecallAt10 = float64(found) / float64(len(queries)*recallK)
	slices.Sort(lat)
	p.SearchP50Ms = ms(lat[len(lat)/2])
	p.SearchP99Ms = ms(lat[len(lat)*99/100])
	return p
}

// benchData returns the bench's vectors, queries and exact top-10 by row:
// read from files or generated, computed or read, and exported when asked.
// It sets cfg's N, Dim and Queries to what the files hold.
func data(cfg *Config, progress io.Writer) (vecs, queries [][]float32, truth [][]uint32, err error) {
	switch {
	case cfg.VectorsFile != "" && cfg.QueriesFile != "":
		if vecs, err = ReadFvecs(cfg.VectorsFile); err != nil {
			return nil, nil, nil, err
		}
		if queries, err = ReadFvecs(cfg.QueriesFile); err != nil {
			return nil, nil, nil, err
		}
		if len(vecs) == 0 || len(queries) == 0 || len(vecs[0]) != len(queries[0]) {
			return nil, nil, nil, errors.New("indexbench: the vectors and queries files must be non-empty and of one dimension")
		}
		if normalize(vecs) || normalize(queries) {
			fmt.Fprintln(progress, "vectors scaled to unit length: similarity is the cosine")
		}
		cfg.N, cfg.Dim, cfg.Queries = len(vecs), len(vecs[0]), len(queries)
		fmt.Fprintf(progress, "read %d %d-d vectors and %d queries\n", cfg.N, cfg.Dim, cfg.Queries)
	case cfg.VectorsFile != "" || cfg.QueriesFile != "":
		return nil, nil, nil, errors.New("indexbench: give both a vectors file and a queries file")
	default:
		fmt.Fprintf(progress, "generating %d clustered %d-d vectors and %d queries\n", cfg.N, cfg.Dim, cfg.Queries)
		rng := rand.New(rand.NewPCG(cfg.Seed, 0xbe7c4))
		all := synthetic.ClusteredVectors(rng, cfg.N+cfg.Queries, cfg.Dim, cfg.Clusters, spread)
		// The queries get a backing array of their own: a slice of all's
		// would keep every base vector reachable, and counted in the
		// index's memory, after the index has copied them.
		vecs, queries = all[:cfg.N], slices.Clone(all[cfg.N:])
	}
	if cfg.GroundTruthFile != "" {
		rows, err := ReadIvecs(cfg.GroundTruthFile)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(rows) != len(queries) {
			return nil, nil, nil, fmt.Errorf("indexbench: %d ground-truth rows for %d queries", len(rows), len(queries))
		}
		for _, r := range rows {
			top := make([]uint32, 0, recallK)
			for _, id := range r[:min(recallK, len(r))] {
				top = append(top, uint32(id))
			}
			truth = append(truth, top)
		}
	} else {
		fmt.Fprintf(progress, "computing exact top-%d for %d queries\n", recallK, len(queries))
		truth = groundTruth(vecs, queries)
	}
	if cfg.ExportDir != "" {
		rows := make([][]int32, len(truth))
		for i, t := range truth {
			for _, s := range t {
				rows[i] = append(rows[i], int32(s))
			}
		}
		for _, w := range []error{
			WriteFvecs(filepath.Join(cfg.ExportDir, "base.fvecs"), vecs),
			WriteFvecs(filepath.Join(cfg.ExportDir, "query.fvecs"), queries),
			WriteIvecs(filepath.Join(cfg.ExportDir, "groundtruth.ivecs"), rows),
		} {
			if w != nil {
				return nil, nil, nil, w
			}
		}
		fmt.Fprintf(progress, "wrote base.fvecs, query.fvecs and groundtruth.ivecs to %s\n", cfg.ExportDir)
	}
	return vecs, queries, truth, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// heapInUse is the live heap after a collection, for memory per vector.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// groundTruth returns the exact top-k slots of every query, scanning in
// parallel: it is the reference, so it must not share code paths with the
// graph beyond the dot product.
func groundTruth(vecs, queries [][]float32) [][]uint32 {
	truth := make([][]uint32, len(queries))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(queries); i += workers {
				truth[i] = nearest(vecs, queries[i], recallK)
			}
		}()
	}
	wg.Wait()
	return truth
}

// nearest returns the rows of the k vectors of vecs of the highest dot
// product with q, best first, by a scan keeping them in order.
func nearest(vecs [][]float32, q []float32, k int) []uint32 {
	type row struct {
		slot  uint32
		score float32
	}
	top := make([]row, 0, k+1)
	for s, v := range vecs {
		d := vek32.Dot(q, v)
		if len(top) == k && d <= top[k-1].score {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, d, func(r row, d float32) int {
			if r.score >= d {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, row{uint32(s), d})
		if len(top) > k {
			top = top[:k]
		}
	}
	out := make([]uint32, len(top))
	for i, r := range top {
		out[i] = r.slot
	}
	return out
}
