package indexbench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// The .fvecs and .ivecs formats (from the INRIA TEXMEX corpora, read by
// FAISS, hnswlib's benchmarks and ann-benchmarks' converters) store each
// vector as a little-endian int32 dimension followed by that many float32s
// (or int32s). docsift bench index reads and writes them so that one file
// of vectors can be run through docsift and the libraries people know.

// maxVecsDim bounds a dimension read from a file: more is a damaged file.
const maxVecsDim = 1 << 16

// ReadFvecs reads every vector of an .fvecs file. All must have one
// dimension.
func ReadFvecs(path string) ([][]float32, error) {
	rows, err := readVecs(path, func(b []byte) []float32 {
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	})
	if err != nil {
		return nil, fmt.Errorf("indexbench: read fvecs %s: %w", path, err)
	}
	return rows, nil
}

// ReadIvecs reads every row of an .ivecs file (ground-truth neighbour ids).
func ReadIvecs(path string) ([][]int32, error) {
	rows, err := readVecs(path, func(b []byte) []int32 {
		v := make([]int32, len(b)/4)
		for i := range v {
			v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	})
	if err != nil {
		return nil, fmt.Errorf("indexbench: read ivecs %s: %w", path, err)
	}
	return rows, nil
}

func readVecs[T any](path string, decode func([]byte) []T) ([][]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var rows [][]T
	var head [4]byte
	var buf []byte
	dim := -1
	for {
		if _, err := io.ReadFull(r, head[:]); errors.Is(err, io.EOF) {
			return rows, nil
		} else if err != nil {
			return nil, fmt.Errorf("row %d: %w", len(rows), err)
		}
		d := int(int32(binary.LittleEndian.Uint32(head[:])))
		if d <= 0 || d > maxVecsDim || (dim >= 0 && d != dim) {
			return nil, fmt.Errorf("row %d has dimension %d (the first had %d)", len(rows), d, dim)
		}
		dim = d
		if cap(buf) < 4*d {
			buf = make([]byte, 4*d)
		}
		if _, err := io.ReadFull(r, buf[:4*d]); err != nil {
			return nil, fmt.Errorf("row %d: %w", len(rows), err)
		}
		rows = append(rows, decode(buf[:4*d]))
	}
}

// WriteFvecs writes vectors as an .fvecs file.
func WriteFvecs(path string, vecs [][]float32) error {
	return writeVecs(path, vecs, math.Float32bits)
}

// WriteIvecs writes rows of ids as an .ivecs file.
func WriteIvecs(path string, rows [][]int32) error {
	return writeVecs(path, rows, func(v int32) uint32 { return uint32(v) })
}

func writeVecs[T any](path string, rows [][]T, bits func(T) uint32) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("indexbench: write %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b [4]byte
	for _, row := range rows {
		binary.LittleEndian.PutUint32(b[:], uint32(len(row)))
		w.Write(b[:])
		for _, x := range row {
			binary.LittleEndian.PutUint32(b[:], bits(x))
			w.Write(b[:])
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("indexbench: write %s: %w", path, err)
	}
	return f.Close()
}

// normalize scales each vector to unit length in place, so that the dot
// product the index ranks by is the cosine. It reports whether any vector
// changed by more than rounding.
func normalize(vecs [][]float32) bool {
	changed := false
	for _, v := range vecs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		n = math.Sqrt(n)
		if n == 0 {
			continue
		}
		if math.Abs(n-1) > 1e-4 {
			changed = true
		}
		for i := range v {
			v[i] = float32(float64(v[i]) / n)
		}
	}
	return changed
}
