package index

// The graph's candidate lists are the index's choice (see efConstructionFor
// and efSearchFor); `docsift bench index` (bench/indexbench) measures
// others beside them, through these and Options.EfConstruction.

// SetEfSearch makes searches of the current graph keep ef candidates
// (0: efSearchFor its size, the index's own), and returns the list they
// keep now; 0 when the index has no graph. It must not run beside
// searches of x: a measurement sets it between passes.
func (x *OwnerIndex) SetEfSearch(ef int) int {
	v := x.current.Load()
	g := v.gen.graph
	if g == nil {
		return 0
	}
	g.efSearch = ef
	if ef == 0 {
		return efSearchFor(v.n)
	}
	return ef
}

// EfConstruction is the candidate list the current graph was built with;
// 0 when the index has no graph.
func (x *OwnerIndex) EfConstruction() int {
	if g := x.current.Load().gen.graph; g != nil {
		return g.efConstruction
	}
	return 0
}
