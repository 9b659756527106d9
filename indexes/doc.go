// Package indexes keeps the live index of every owner (a project, or a
// customer of one) that this process serves: the set loads an owner's
// index on first use from its snapshot and catches it up with the store,
// the source of truth; publishes each commit to searches, which never
// wait for one; saves changed indexes as snapshots and segments, and
// whole at a stop; catches a loaded owner up after another node of a
// cluster changed its chunks; evicts the owners this node no longer
// holds; and counts each owner's chunks still waiting for their vectors
// and those a load has yet to add.
//
// A Set is built once per data dir (New) over a Source: the store, with
// the indexing pipeline's reading of a stored chunk as an index entry.
// ingest writes through it (Update, Replace, NoteWaiting); search reads
// it (Get, Waiting, CatchingUp); a cluster drives CatchUp and Evict.
//
//	Get(owner)       load (snapshot, then the store's later chunks) and return
//	Update/Replace   change an owner's index together with the store
//	CatchUp(owner)   reconcile a loaded owner with the store
//	Evict()          save and drop the owners this node no longer holds
//	Snapshot()       save what changed; SnapshotWhole() at a stop
//	Waiting(owner)   chunks found by their words only, until their vectors come
package indexes
