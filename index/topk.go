package index

import (
	"cmp"
	"slices"
)

// topK keeps the k best items seen so far in a min-heap, so the worst kept
// item is evicted in O(log k) when a better one arrives. Of two items with
// the same score the lower slot is the better, whatever order they come
// in, so that the lexical side's pruned pass (prune.go), which meets docs
// in another order, keeps what exhaustive scoring keeps.
type topK struct {
	k    int
	heap []scored // min-heap on worse
}

func newTopK(k int) *topK { return &topK{k: k, heap: make([]scored, 0, k)} }

// worse orders items from the worst: lower score, then higher slot.
func worse(a, b scored) bool {
	return a.score < b.score || a.score == b.score && a.slot > b.slot
}

// push offers an item; it reports whether the item was kept.
func (t *topK) push(slot uint32, score float32) bool {
	s := scored{slot, score}
	if len(t.heap) < t.k {
		t.heap = append(t.heap, s)
		t.up(len(t.heap) - 1)
		return true
	}
	if !worse(t.heap[0], s) {
		return false
	}
	t.heap[0] = s
	t.down(0)
	return true
}

// sorted returns the kept items best first, ties broken by slot so results
// are deterministic.
func (t *topK) sorted() []scored {
	out := append([]scored(nil), t.heap...)
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.slot, b.slot)
	})
	return out
}

func (t *topK) up(i int) {
	h := t.heap
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (t *topK) down(i int) {
	h := t.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
