package index

// vectorSearcher finds the slots nearest to a query. Two implementations sit
// behind it: exactSearcher (a scan, exact and fastest for small owners) and
// the HNSW graph (approximate, sub-linear for large ones).
type vectorSearcher interface {
	// insert makes slots (already in the vectorSet) searchable.
	insert(slots []uint32)
	// search returns up to k live slots, most similar first.
	search(q []float32, k int) []scored
}

// scored is a slot (or lexical doc) with its similarity; higher is better.
type scored struct {
	slot  uint32
	score float32
}

// exactSearcher scans every live slot. It needs no state of its own.
type exactSearcher struct{ vs *vectorSet }

func (e exactSearcher) insert([]uint32) {}

func (e exactSearcher) search(q []float32, k int) []scored {
	if k <= 0 {
		return nil
	}
	top := newTopK(k)
	for s := 0; s < e.vs.slots(); s++ {
		if e.vs.dead[s] {
			continue
		}
		top.push(uint32(s), e.vs.dot(q, uint32(s)))
	}
	return top.sorted()
}
