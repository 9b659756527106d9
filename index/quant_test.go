package index

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/viterin/vek/vek32"
)

// TestQuantisedDotIsClose checks the per-vector int8 codes against the
// float dot product on unit vectors of the bench's dimension: the error
// must stay far below the gap between neighbours that re-scoring has to
// close.
func TestQuantisedDotIsClose(t *testing.T) {
	const dim = 384
	vecs := testVectors(200, dim, 31)
	codes := make([]code, len(vecs))
	for i, v := range vecs {
		codes[i] = code{make([]int8, dim), 0}
		codes[i].scale = quantise(codes[i].c, v)
	}
	var worst float64
	for i := range vecs {
		for j := range vecs {
			exact := float64(vek32.Dot(vecs[i], vecs[j]))
			worst = max(worst, math.Abs(float64(codes[i].approx(codes[j]))-exact))
		}
	}
	if worst > 0.02 {
		t.Errorf("worst error of a quantised dot product %.4f, want ≤ 0.02", worst)
	}
	zero := code{make([]int8, dim), 0}
	if s := quantise(zero.c, make([]float32, dim)); s != 0 || zero.approx(codes[0]) != 0 {
		t.Errorf("zero vector: scale %v, dot %v", s, zero.approx(codes[0]))
	}
}

func BenchmarkDot384(b *testing.B) {
	vecs := testVectors(2, 384, 1)
	x, y := code{make([]int8, 384), 0}, code{make([]int8, 384), 0}
	x.scale, y.scale = quantise(x.c, vecs[0]), quantise(y.c, vecs[1])
	b.Run("float32", func(b *testing.B) {
		var s float32
		for range b.N {
			s += vek32.Dot(vecs[0], vecs[1])
		}
		_ = s
	})
	b.Run("int8", func(b *testing.B) {
		var s float32
		for range b.N {
			s += x.approx(y)
		}
		_ = s
	})
}

// TestDotInt8MatchesLoop checks the vector kernel against the plain loop
// at every length around its 16- and 32-code steps, extreme codes included.
func TestDotInt8MatchesLoop(t *testing.T) {
	a, b := make([]int8, 100), make([]int8, 100)
	for i := range a {
		a[i], b[i] = int8(i*37-128), int8(127-i*53)
	}
	a[0], b[0] = -128, -128
	for n := range len(a) + 1 {
		if got, want := dotInt8(a[:n], b[:n]), dotInt8Go(a[:n], b[:n]); got != want {
			t.Fatalf("length %d: %d, want %d", n, got, want)
		}
	}
}

// TestMappedVectorsThroughCompaction keeps vectors in mapped files while
// a compaction drops the old generation (whose pages are unmapped once
// unreachable), then checks searches against brute force and a snapshot
// round trip against the index it was written from.
func TestMappedVectorsThroughCompaction(t *testing.T) {
	opts := withVectorFiles(t)
	const dim = 32
	all := testVectors(4100, dim, 41)
	vecs, queries := all[:4000], all[4000:]
	x := opts.New("m", dim)
	must(t, x.Add(entries(vecs, 0)...))
	if !x.gen.pages[0].scratchVecs {
		t.Fatal("the vectors are on the heap, not in the vector files")
	}
	var gone []uint64
	for i := 0; i < len(vecs); i += 3 {
		if i%3 != 2 {
			gone = append(gone, uint64(i), uint64(i+1))
		}
	}
	x.Delete(gone...)
	live := func(i int) bool { return i%3 == 2 }
	runtime.GC()
	runtime.GC()
	if r := recallAt10(x, vecs, queries, live); r < 0.95 {
		t.Errorf("recall@10 after compaction %.3f, want ≥ 0.95", r)
	}
	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	y, _, err := opts.ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries[:20] {
		a, b := x.Search(Query{Vector: q, K: 10}), y.Search(Query{Vector: q, K: 10})
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("loaded index answers %v, written one %v", b, a)
		}
	}
}

// scratchMaps counts this process's memory maps of scratch files.
func scratchMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "/vectors-")
}

// TestScratchFilesShared: the vectors of many small owners' pages share a
// few scratch files rather than one memory map a page.
func TestScratchFilesShared(t *testing.T) {
	opts := withVectorFiles(t)
	const owners, dim = 200, 384
	before := scratchMaps(t)
	xs := make([]*OwnerIndex, owners)
	for i := range xs {
		xs[i] = opts.New("m", dim)
		must(t, xs[i].Add(entries(testVectors(40, dim, uint64(i)), 1)...)) // pages of 16, 16 and 32 slots
	}
	if maps := scratchMaps(t) - before; maps > 2 {
		t.Fatalf("%d owners' %d pages made %d memory maps", owners, 3*owners, maps)
	}
	for _, i := range []int{0, 7, owners - 1} {
		if hits := xs[i].Search(Query{Vector: testVectors(40, dim, uint64(i))[35], K: 1}); len(hits) != 1 || hits[0].ID != 36 {
			t.Fatalf("owner %d: a vector in a shared scratch file is not found first: %v", i, hits)
		}
	}
}

// TestScratchBlocksReused: a block given back goes to the next page of
// its size, zeroed, and not to a page of another size.
func TestScratchBlocksReused(t *testing.T) {
	dir := t.TempDir()
	var a scratchArena
	v, err := a.alloc(dir, 16*384)
	must(t, err)
	w, err := a.alloc(dir, 100) // a block of its own, rounded up to a memory page
	must(t, err)
	if len(w) != 100 || cap(w) != 1024 || uintptr(unsafe.Pointer(&w[0]))%4096 != 0 {
		t.Fatalf("a block of 100 floats holds %d and starts %d bytes into a memory page", cap(w), uintptr(unsafe.Pointer(&w[0]))%4096)
	}
	for i := range v {
		v[i] = 1
	}
	a.release(v)
	if u, err := a.alloc(dir, 32*384); err != nil || &u[0] == &v[0] {
		t.Fatalf("a page of another size was given the block back: %v", err)
	}
	u, err := a.alloc(dir, 16*384)
	must(t, err)
	if &u[0] != &v[0] {
		t.Fatal("the block given back was not handed out again")
	}
	if slices.ContainsFunc(u, func(f float32) bool { return f != 0 }) {
		t.Fatal("a block handed out again holds the vectors of the page before")
	}
}

// withVectorFiles is testOpts with the vectors in scratch files in a
// directory of t's.
func withVectorFiles(t *testing.T) Options {
	t.Helper()
	vf, err := NewVectorFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := testOpts
	opts.Vectors = vf
	return opts
}
