package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/docsift/docsift/cluster"
	"github.com/docsift/docsift/store"
)

// BenchmarkClusterClaimBehindOthers is a claim by a node whose own jobs
// wait behind thousands of jobs placed on other nodes: how a node that
// finished its owners' work looks for more while the others are busy.
func BenchmarkClusterClaimBehindOthers(b *testing.B) {
	nodes := joined(b, 3)
	live, _ := nodes[0].LiveNodes()
	// 4,000 jobs of owners placed elsewhere, then one of our own.
	var others []string
	for k := 0; len(others) < 20; k++ {
		owner := fmt.Sprintf("cus_other_%d", k)
		if h, _ := cluster.Holder(owner, live); h.ID != nodes[0].node {
			others = append(others, owner)
		}
	}
	for i := range 4000 {
		uploadTo(b, nodes[1], others[i%len(others)])
	}
	mine := ownerPlacedOn(b, nodes[0].node, live)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		_, job := uploadTo(b, nodes[1], mine)
		b.StartTimer()
		j, _, err := nodes[0].ClaimJob(nil)
		if err != nil || j.ID != job.ID {
			b.Fatalf("claimed %v, %v", j, err)
		}
		b.StopTimer()
		if err := nodes[0].FinishJob(j.ID, 1, 1, ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	if _, _, err := nodes[0].ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		b.Fatalf("a job left for node 0: %v", err)
	}
}
