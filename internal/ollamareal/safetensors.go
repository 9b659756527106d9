package ollamareal

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// tensorSpec is one tensor of a generated model: its Hugging Face name, its
// shape (row-major, outermost first) and how to fill it.
type tensorSpec struct {
	Name  string
	Shape []int
	Fill  fill
	// Set, when non-nil, overrides the value at a flat (row-major) index
	// when it returns true: how a model is given a fixed property.
	Set func(i int) (float32, bool)
}

// fill says how a tensor's values are made. Random weights use a normal
// distribution of small deviation, as a freshly initialised transformer
// does, so activations stay finite through every layer; norms start at
// one and biases at zero.
type fill struct {
	Const float32 // used when Std == 0
	Std   float32
}

var (
	ones   = fill{Const: 1}
	zeros  = fill{}
	weight = fill{Std: 0.02}
)

func (t tensorSpec) elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// dtype is what the tensor is stored as: matrices in F16, which Ollama's
// converter keeps as they are (it would turn F32 matrices into F16 anyway),
// vectors in F32, which it keeps too. Half the bytes of F32 matter for the
// nomic-sized model (220 MB rather than 440 MB).
func (t tensorSpec) dtype() (string, int) {
	if len(t.Shape) >= 2 {
		return "F16", 2
	}
	return "F32", 4
}

// writeSafetensors writes tensors to path in the safetensors layout: an
// 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data. Values come
// from a generator seeded by seed and the tensor's name, so a file is the
// same byte for byte on every run, whatever order tensors are listed in.
func writeSafetensors(path string, seed uint64, tensors []tensorSpec) error {
	type entry struct {
		DType   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	header := make(map[string]any, len(tensors)+1)
	header["__metadata__"] = map[string]string{"format": "pt"}
	var off int64
	for _, t := range tensors {
		dt, size := t.dtype()
		n := int64(t.elements() * size)
		header[t.Name] = entry{DType: dt, Shape: t.Shape, Offsets: [2]int64{off, off + n}}
		off += n
	}
	hdr, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("ollamareal: safetensors header: %w", err)
	}
	// Pad the header with spaces so the data starts 8-byte aligned, as the
	// format's own writers do.
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("ollamareal: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = binary.Write(w, binary.LittleEndian, uint64(len(hdr)))
	if err == nil {
		_, err = w.Write(hdr)
	}
	for _, t := range tensors {
		if err != nil {
			break
		}
		err = writeTensor(w, seed, t)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ollamareal: write %s: %w", path, err)
	}
	return nil
}

func writeTensor(w io.Writer, seed uint64, t tensorSpec) error {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	dt, size := t.dtype()
	buf := make([]byte, 0, 64<<10)
	for i, n := 0, t.elements(); i < n; i++ {
		v := t.Fill.Const
		if t.Fill.Std != 0 {
			v = float32(rng.NormFloat64()) * t.Fill.Std
		}
		if t.Set != nil {
			if x, ok := t.Set(i); ok {
				v = x
			}
		}
		if dt == "F16" {
			buf = binary.LittleEndian.AppendUint16(buf, float16Bits(v))
		} else {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		if len(buf)+size > cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// float16Bits converts f to IEEE 754 half precision, rounding to nearest
// even, with subnormals (weights of deviation 0.02 reach them) and overflow
// to infinity.
func float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case (b>>23)&0xff == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign // too small even for a subnormal
		}
		mant |= 0x800000 // the implicit leading one
		shift := uint(14 - exp)
		half := uint32(1) << (shift - 1)
		rest := mant & (1<<shift - 1)
		m := mant >> shift
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	m := mant >> 13
	rest := mant & 0x1fff
	out := uint32(exp)<<10 | m
	if rest > 0x1000 || (rest == 0x1000 && m&1 == 1) {
		out++ // may carry into the exponent, which is still right
	}
	return sign | uint16(out)
}
