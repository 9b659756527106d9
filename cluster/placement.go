// Package cluster places owners on the nodes of a docsift cluster: each
// owner's index is held by one live node at a time, chosen by rendezvous
// hashing, so every node computes the same placement from the same list of
// nodes without asking anyone, and a node joining or leaving moves only the
// owners it wins or held (see docs/cluster.md).
package cluster

import (
	"crypto/md5"
	"encoding/hex"

	"github.com/docsift/docsift/store"
)

// weight is an owner's rendezvous weight on a node: the hex MD5 of
// "<owner> <node id>", compared as a string. The PostgreSQL store computes
// the same in SQL to claim only the jobs of the owners placed on its node,
// so the two must not drift apart: MD5 and hex because PostgreSQL has them
// built in, not for any property of MD5 beyond spreading owners evenly.
func weight(owner, node string) string {
	sum := md5.Sum([]byte(owner + " " + node))
	return hex.EncodeToString(sum[:])
}

// Holder returns the node of nodes that holds owner's index, false when
// nodes is empty.
func Holder(owner string, nodes []store.Node) (store.Node, bool) {
	var best store.Node
	var bestWeight string
	for _, n := range nodes {
		if w := weight(owner, n.ID); w > bestWeight {
			best, bestWeight = n, w
		}
	}
	return best, bestWeight != ""
}
