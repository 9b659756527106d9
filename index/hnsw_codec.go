package index

import (
	"fmt"
	"sync/atomic"
)

// encodeGraph writes the view's graph: parameters (so a build with other M
// is rejected, not misread), entry point, levels, flat layer-0 links, then
// the upper-layer links of the nodes that have them. Links to slots past
// the view (made by a Commit still running) are left out.
func (v *view) encodeGraph(e *encoder) {
	e.u32(hnswM)
	e.u32(v.entry)
	e.u32(uint32(v.maxLevel))
	e.u32(v.n)
	v.eachPage(func(pg *page, used int) { e.bytes(pg.levels[:used]) })
	var list [hnswM0 + 1]uint32
	for s := range v.n {
		e.u32s(v.linksWithin(s, 0, list[:hnswM0+1]))
	}
	for s := range v.n {
		for layer := 1; layer <= v.pages.level(s); layer++ {
			e.u32s(v.linksWithin(s, layer, list[:hnswM+1]))
		}
	}
}

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

// decodeGraph reads a graph over gen's slots into gen and checks every link,
// so that a bad file cannot send a search out of bounds.
func decodeGraph(d *decoder, gen *generation) error {
	if m := d.u32(); d.err == nil && m != hnswM {
		return fmt.Errorf("graph built with M=%d, this build uses %d", m, hnswM)
	}
	entry := d.u32()
	maxLevel := int(d.u32())
	n := d.count(1)
	if d.err != nil {
		return d.err
	}
	if n != int(gen.n) {
		return fmt.Errorf("graph has %d nodes for %d vectors", n, gen.n)
	}
	levels := d.take(n)
	links0 := d.take(4 * n * (hnswM0 + 1))
	if d.err != nil {
		return d.err
	}
	for _, pg := range gen.pages {
		pg.addGraph()
	}
	for s := range uint32(n) {
		lvl := int(levels[s])
		if lvl > hnswMaxLevel {
			return fmt.Errorf("node %d has level %d", s, lvl)
		}
		p, off := pageOf(s)
		pg := gen.pages[p]
		pg.levels[off] = uint8(lvl)
		readU32s(pg.links0[off*(hnswM0+1):(off+1)*(hnswM0+1)], links0[4*int(s)*(hnswM0+1):])
		if lvl > 0 {
			up := d.take(4 * lvl * (hnswM + 1))
			if d.err != nil {
				return d.err
			}
			pg.upper[off] = make([]uint32, lvl*(hnswM+1))
			readU32s(pg.upper[off], up)
		}
	}
	if n == 0 {
		if entry != noNode {
			return fmt.Errorf("empty graph with entry %d", entry)
		}
	} else if int(entry) >= n || gen.pages.level(entry) != maxLevel {
		return fmt.Errorf("bad entry point %d at level %d", entry, maxLevel)
	}
	for s := range uint32(n) {
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
				if int(nb) >= n || gen.pages.level(nb) < layer {
					return fmt.Errorf("node %d layer %d links to bad node %d", s, layer, nb)
				}
			}
		}
	}
	// Seed the level generator with the size, so nodes added after a
	// load do not repeat the levels drawn before it.
	g := newHNSW(uint64(n))
	g.entry, g.maxLevel = entry, maxLevel
	gen.graph = g
	return nil
}
