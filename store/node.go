package store

// Node is one docsift process of a cluster, as the cluster's store knows
// it: an id that is new at every start, and the URL other nodes reach its
// API at.
type Node struct {
	ID  string
	URL string
}
