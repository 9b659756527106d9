package index

import (
	"cmp"
	"slices"
)

// topK keeps the k highest-scoring items seen so far in a min-heap, so the
// worst kept item is evicted in O(log k) when a better one arrives.
type topK struct {
	k    int
	heap []scored // min-heap on score
}

func newTopK(k int) *topK { return &topK{k: k, heap: make([]scored, 0, k)} }

// push offers an item; it reports whether the item was kept.
func (t *topK) push(slot uint32, score float32) bool {
	if len(t.heap) < t.k {
		t.heap = append(t.heap, scored{slot, score})
		t.up(len(t.heap) - 1)
		return true
	}
	if score <= t.heap[0].score {
		return false
	}
	t.heap[0] = scored{slot, score}
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
		if h[p].score <= h[i].score {
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
		if r := l + 1; r < len(h) && h[r].score < h[l].score {
			m = r
		}
		if h[i].score <= h[m].score {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
