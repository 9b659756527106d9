package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// encoder writes little-endian fields to a buffered writer and remembers the
// first error, so the snapshot writer reads as a list of fields.
type encoder struct {
	w   *bufio.Writer
	buf [8]byte
	err error
	off int64 // bytes written, for align

	scratch []byte // see words

	// valueByValue writes arrays value by value, as a big-endian
	// machine does, even on a little-endian one: tests compare the two.
	valueByValue bool
}

// inMemoryOrder reports whether e writes arrays as they are in memory.
func (e *encoder) inMemoryOrder() bool { return littleEndian && !e.valueByValue }

func (e *encoder) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.off += int64(len(b))
	}
}

// sectionAlign is the alignment of every array a snapshot is read in
// place from (see mapped.go): at least any element's size, so that the
// mapped words can be read as Go values, atomically where they are
// atomics, and a cache line, so that no array shares one with another.
const sectionAlign = 64

// align pads with zeros to the next multiple of sectionAlign.
func (e *encoder) align() {
	var zeros [sectionAlign]byte
	if r := e.off % sectionAlign; r != 0 {
		e.bytes(zeros[:sectionAlign-r])
	}
}

func (e *encoder) u8(v uint8) { e.bytes([]byte{v}) }

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
		e.off += int64(len(s))
	}
}

// f32s writes floats.
func (e *encoder) f32s(v []float32) {
	if e.inMemoryOrder() {
		e.bytes(memoryOf(v))
		return
	}
	e.words(len(v), 4, func(b []byte, i int) { binary.LittleEndian.PutUint32(b, math.Float32bits(v[i])) })
}

// u32s writes words.
func (e *encoder) u32s(v []uint32) {
	if e.inMemoryOrder() {
		e.bytes(memoryOf(v))
		return
	}
	e.words(len(v), 4, func(b []byte, i int) { binary.LittleEndian.PutUint32(b, v[i]) })
}

// u64s writes words.
func (e *encoder) u64s(v []uint64) {
	if e.inMemoryOrder() {
		e.bytes(memoryOf(v))
		return
	}
	e.words(len(v), 8, func(b []byte, i int) { binary.LittleEndian.PutUint64(b, v[i]) })
}

// memoryOf is the bytes a slice's values occupy. On a little-endian
// machine they are what a snapshot holds, so arrays are written as they
// are instead of value by value: a million-chunk snapshot is gigabytes of
// them.
func memoryOf[T any](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(*new(T))))
}

// words writes n values of size bytes each, put filling value i into b,
// through the encoder's scratch buffer: one Write per 16 KiB instead of
// one per value, and no allocation per call (a snapshot writes a list
// per term, millions of them).
func (e *encoder) words(n, size int, put func(b []byte, i int)) {
	if e.scratch == nil {
		e.scratch = make([]byte, 16<<10)
	}
	per := len(e.scratch) / size
	for i := 0; i < n && e.err == nil; {
		k := min(n-i, per)
		for j := range k {
			put(e.scratch[j*size:(j+1)*size], i+j)
		}
		e.bytes(e.scratch[:k*size])
		i += k
	}
}

// errShort reports a field that runs past the end of the content.
var errShort = errors.New("truncated field")

// decoder reads what encoder wrote from an in-memory buffer, checking every
// length against what is left so that no field can make it allocate more
// than the file holds.
type decoder struct {
	b   []byte
	err error
	off int // bytes taken, for align
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errShort
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	d.off += n
	return out
}

// align skips what encoder.align wrote.
func (d *decoder) align() {
	if r := d.off % sectionAlign; r != 0 {
		d.take(sectionAlign - r)
	}
}

func (d *decoder) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) str() string {
	return string(d.take(int(d.u32())))
}

// count reads a length prefix for items of size bytes each and fails when
// the rest of the buffer cannot hold that many.
func (d *decoder) count(size int) int {
	n := int(d.u32())
	if d.err == nil && n*size > len(d.b) {
		d.err = fmt.Errorf("count %d exceeds remaining %d bytes", n, len(d.b))
		return 0
	}
	return n
}

// readF32s decodes len(dst) little-endian floats from src.
func readF32s(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// readU32s decodes len(dst) little-endian words from src.
func readU32s(dst []uint32, src []byte) {
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint32(src[4*i:])
	}
}
