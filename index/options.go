package index

// Options are what the process that holds indexes decides for all of
// them: where their vectors live, how many snapshots it maps, and how
// their graphs are built. The zero value keeps vectors on the heap, maps
// snapshots within the process's budget (see SnapshotMaps) and builds
// each model's graph as efConstructionFor says. An index made or read
// with Options keeps them for its life, and for the snapshots it writes
// and moves onto.
type Options struct {
	// Vectors, when set, holds the float32 vectors of every page the
	// index allocates in memory-mapped scratch files instead of on the
	// Go heap (see VectorFiles).
	Vectors *VectorFiles
	// Maps is the budget of memory maps the index's snapshots take; nil
	// is the process's default, sized from the kernel's limit.
	Maps *SnapshotMaps
	// EfConstruction, when above 0, is the candidate list of inserts
	// into a graph of a learned model's vectors, in place of
	// hnswEfConstructionLearned: benchmarks sweep it, and tests build
	// their graphs from fewer (the code is the same at any list, and
	// building every test graph from 200 under the race detector took
	// the package's tests from seven minutes to sixteen).
	EfConstruction int
}

// maps is o's budget of memory maps.
func (o Options) maps() *SnapshotMaps {
	if o.Maps != nil {
		return o.Maps
	}
	return defaultSnapshotMaps
}

// efConstruction is the candidate list of inserts into a graph of
// model's vectors.
func (o Options) efConstruction(model string) int {
	if o.EfConstruction > 0 && !hashed(model) {
		return o.EfConstruction
	}
	return efConstructionFor(model)
}

// New returns an empty index for vectors of dim dimensions from model.
func New(model string, dim int) *OwnerIndex { return Options{}.New(model, dim) }
