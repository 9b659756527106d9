package index

import (
	"fmt"
	"math/rand/v2"
)

// encode writes the graph: parameters (so a build with other M is
// rejected, not misread), entry point, levels, flat layer-0 links, then the
// upper-layer links of the nodes that have them.
func (g *hnsw) encode(e *encoder) {
	e.u32(hnswM)
	e.u32(g.entry)
	e.u32(uint32(g.maxLevel))
	e.u32(uint32(len(g.levels)))
	e.bytes(g.levels)
	e.u32s(g.links0)
	for _, up := range g.upper {
		if len(up) > 0 {
			e.u32s(up)
		}
	}
}

// decodeHNSW reads a graph over vs and checks every link, so that a bad
// file cannot send a search out of bounds.
func decodeHNSW(d *decoder, vs *vectorSet) (*hnsw, error) {
	g := newHNSW(vs)
	if m := d.u32(); d.err == nil && m != hnswM {
		return nil, fmt.Errorf("graph built with M=%d, this build uses %d", m, hnswM)
	}
	g.entry = d.u32()
	g.maxLevel = int(d.u32())
	n := d.count(1)
	if d.err != nil {
		return nil, d.err
	}
	if n != vs.slots() {
		return nil, fmt.Errorf("graph has %d nodes for %d vectors", n, vs.slots())
	}
	g.levels = append([]uint8(nil), d.take(n)...)
	g.links0 = d.u32s(n * (hnswM0 + 1))
	g.upper = make([][]uint32, n)
	for s, lvl := range g.levels {
		if lvl > hnswMaxLevel {
			return nil, fmt.Errorf("node %d has level %d", s, lvl)
		}
		if lvl > 0 {
			g.upper[s] = d.u32s(int(lvl) * (hnswM + 1))
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if n == 0 {
		if g.entry != noNode {
			return nil, fmt.Errorf("empty graph with entry %d", g.entry)
		}
		return g, nil
	}
	if int(g.entry) >= n || int(g.levels[g.entry]) != g.maxLevel {
		return nil, fmt.Errorf("bad entry point %d at level %d", g.entry, g.maxLevel)
	}
	for s := range n {
		for layer := 0; layer <= int(g.levels[s]); layer++ {
			l := g.list(uint32(s), layer)
			maxN := hnswM
			if layer == 0 {
				maxN = hnswM0
			}
			if int(l[0]) > maxN {
				return nil, fmt.Errorf("node %d layer %d has %d links", s, layer, l[0])
			}
			for _, nb := range l[1 : 1+l[0]] {
				if int(nb) >= n || int(g.levels[nb]) < layer {
					return nil, fmt.Errorf("node %d layer %d links to bad node %d", s, layer, nb)
				}
			}
		}
	}
	// Re-seed the level generator so nodes added after a load do not
	// repeat the levels drawn before it.
	g.rng = rand.New(rand.NewPCG(uint64(n), 0xd0c5))
	return g, nil
}
