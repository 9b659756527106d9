package index

// scored is a slot with its similarity (or BM25); higher is better.
type scored struct {
	slot  uint32
	score float32
}

// searchVectors returns up to k slots alive in v, most similar first:
// through the graph when the generation has one, its walk keeping at
// least ef (0: the graph's own, see efSearchFor), else by scanning every slot, which
// is as fast for small owners.
func (v *view) searchVectors(q []float32, k, ef int) []scored {
	if g := v.gen.graph; g != nil {
		return g.searchWithin(v, q, k, ef, nil)
	}
	return v.scan(q, k)
}

// scan compares q with every slot's codes and re-scores the best
// max(2k, rescoreMin) exactly: the k it returns are the exact top k unless
// one of them ranked below that by its codes.
func (v *view) scan(q []float32, k int) []scored {
	if k <= 0 {
		return nil
	}
	qc := code{make([]int8, len(q)), 0}
	qc.scale = quantise(qc.c, q)
	top := newTopK(max(2*k, rescoreMin))
	for s := range v.n {
		if v.dead > 0 && !v.alive(s) {
			continue
		}
		top.push(s, v.pages.approx(qc, s))
	}
	return rescore(v.pages, q, top.heap, k)
}
