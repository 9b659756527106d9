package index

import (
	"fmt"
	"sync/atomic"
)

// linksWithin fills list (as long as a stored list) with s's links on
// layer that lie within v: count, links, zeros.
func (v *view) linksWithin(s uint32, layer int, list []uint32) []uint32 {
	clear(list)
	l := v.pages.links(s, layer)
	n := 0
	for i := 1; i <= int(atomic.LoadUint32(&l[0])); i++ {
		if nb := atomic.LoadUint32(&l[i]); nb < v.n {
			n++
			list[n] = nb
		}
	}
	list[0] = uint32(n)
	return list
}

// checkGraph checks a graph read from a file over gen's slots: its entry
// point and every link, so that a bad file cannot send a search out of
// bounds.
func checkGraph(gen *generation, entry uint32, maxLevel int) error {
	if err := checkEntry(gen, entry, maxLevel); err != nil {
		return err
	}
	for s := range gen.n {
		if err := checkNode(gen, s); err != nil {
			return err
		}
	}
	return nil
}

// checkEntry checks a graph's entry point and top layer: a node on that
// layer, or none when no node is linked yet (every slot waits for its
// vector).
func checkEntry(gen *generation, entry uint32, maxLevel int) error {
	if entry == noNode && maxLevel == 0 || entry < gen.n && gen.pages.level(entry) == maxLevel {
		return nil
	}
	return fmt.Errorf("bad entry point %d at level %d", entry, maxLevel)
}

// checkNode checks node s's links on each of its layers: no more than a
// list holds, each to a node below gen.n on that layer.
func checkNode(gen *generation, s uint32) error {
	for layer := 0; layer <= gen.pages.level(s); layer++ {
		l := gen.pages.links(s, layer)
		maxN := hnswM
		if layer == 0 {
			maxN = hnswM0
		}
		if int(l[0]) > maxN {
			return fmt.Errorf("node %d layer %d has %d links", s, layer, l[0])
		}
		for _, nb := range l[1 : 1+l[0]] {
			if nb >= gen.n || gen.pages.level(nb) < layer {
				return fmt.Errorf("node %d layer %d links to bad node %d", s, layer, nb)
			}
		}
	}
	return nil
}
