package index

// scored is a slot with its similarity (or BM25); higher is better.
type scored struct {
	slot  uint32
	score float32
}

// searchVectors returns up to k slots alive in v, most similar first:
// through the graph when the generation has one, else by scanning every
// slot, which is exact and as fast for small owners.
func (v *view) searchVectors(q []float32, k int) []scored {
	if g := v.gen.graph; g != nil {
		return g.search(v, q, k)
	}
	return v.scan(q, k)
}

func (v *view) scan(q []float32, k int) []scored {
	if k <= 0 {
		return nil
	}
	top := newTopK(k)
	for s := range v.n {
		if v.dead > 0 && !v.alive(s) {
			continue
		}
		top.push(s, v.pages.dot(q, s))
	}
	return top.sorted()
}
