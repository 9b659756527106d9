package index

import "github.com/viterin/vek/vek32"

// vectorSet holds every vector of an owner in one contiguous float32 slab,
// addressed by slot. Contiguous storage keeps a brute-force scan and the
// graph's distance calls cache-friendly and lets a snapshot write the slab
// in one pass. A deleted or replaced entry leaves a tombstone in its slot
// (the graph may still route through it); compaction reclaims the slots.
type vectorSet struct {
	dim    int
	data   []float32 // slot s is data[s*dim : (s+1)*dim]
	ids    []uint64  // slot -> entry ID
	dead   []bool    // slot -> tombstoned
	slotOf map[uint64]uint32
	nDead  int
}

func newVectorSet(dim int) *vectorSet {
	return &vectorSet{dim: dim, slotOf: make(map[uint64]uint32)}
}

// slots is the number of slots in use, live or dead.
func (v *vectorSet) slots() int { return len(v.ids) }

// live is the number of entries that searches may return.
func (v *vectorSet) live() int { return len(v.ids) - v.nDead }

func (v *vectorSet) vec(s uint32) []float32 {
	off := int(s) * v.dim
	return v.data[off : off+v.dim : off+v.dim]
}

// add appends vec under id in a new slot, tombstoning any previous slot of id.
func (v *vectorSet) add(id uint64, vec []float32) uint32 {
	v.remove(id)
	s := uint32(len(v.ids))
	v.data = append(v.data, vec...)
	v.ids = append(v.ids, id)
	v.dead = append(v.dead, false)
	v.slotOf[id] = s
	return s
}

// remove tombstones id's slot; it reports whether id was present.
func (v *vectorSet) remove(id uint64) bool {
	s, ok := v.slotOf[id]
	if !ok {
		return false
	}
	delete(v.slotOf, id)
	v.dead[s] = true
	v.nDead++
	return true
}

// dot is the similarity of a query to a slot: vectors are unit length, so
// the dot product is the cosine.
func (v *vectorSet) dot(q []float32, s uint32) float32 {
	return vek32.Dot(q, v.vec(s))
}
