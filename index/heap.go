package index

// maxHeap pops the most similar item first: the candidate frontier of a
// graph search.
type maxHeap []scored

func (h *maxHeap) push(s scored) {
	*h = append(*h, s)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].score >= a[i].score {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *maxHeap) pop() scored {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(a) {
			break
		}
		m := l
		if r := l + 1; r < len(a) && a[r].score > a[l].score {
			m = r
		}
		if a[i].score >= a[m].score {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
