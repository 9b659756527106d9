package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/docsift/docsift/internal/pgtest"
)

// TestBenchCluster runs the cluster benchmark tiny, two nodes on a
// throwaway PostgreSQL against a freshly built binary, and checks that
// every figure is one a working cluster could give: both setups ingest
// and answer everything, and the failover happened and was timed.
func TestBenchCluster(t *testing.T) {
	pg := pgtest.Start(t)
	db := pg.Database(t)
	bin := filepath.Join(t.TempDir(), "docsift")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/docsift/docsift").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := ClusterConfig{Nodes: 2, Customers: 2, Docs: 10, StoreURL: db, Binary: bin}
	res, err := Cluster(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes != 2 || res.Customers != 2 || res.Documents != 20 {
		t.Errorf("%d nodes, %d customers, %d documents; want 2, 2, 20", res.Nodes, res.Customers, res.Documents)
	}
	for _, run := range []ClusterRun{res.Reference, res.Cluster} {
		// Documents of the default words are one chunk each.
		if run.Chunks != res.Documents {
			t.Errorf("%s: %d chunks of %d one-chunk documents", run.Store, run.Chunks, res.Documents)
		}
		if run.IngestChunksPerSecond <= 0 || run.IngestSeconds <= 0 {
			t.Errorf("%s: ingest %.1f chunks/s in %.2f s", run.Store, run.IngestChunksPerSecond, run.IngestSeconds)
		}
		if run.RSSAnonBytes < int64(run.Nodes)<<20 {
			t.Errorf("%s: %d bytes of memory on %d nodes", run.Store, run.RSSAnonBytes, run.Nodes)
		}
		q := run.Queries
		if q.Errors != 0 || q.RequestsPerSecond <= 0 || q.P50Ms <= 0 || q.P99Ms < q.P50Ms || q.Concurrency != 8 {
			t.Errorf("%s: queries %+v", run.Store, q)
		}
	}
	if res.Reference.Nodes != 1 || res.Reference.Store != "bbolt" || res.Cluster.Nodes != 2 || res.Cluster.Store != "postgres" {
		t.Errorf("runs: %d on %s, %d on %s", res.Reference.Nodes, res.Reference.Store, res.Cluster.Nodes, res.Cluster.Store)
	}
	if want := res.Cluster.IngestChunksPerSecond / res.Reference.IngestChunksPerSecond; res.IngestRatio != want {
		t.Errorf("ingest ratio %.3f, want %.3f", res.IngestRatio, want)
	}
	if want := res.Cluster.Queries.RequestsPerSecond / res.Reference.Queries.RequestsPerSecond; res.QueryRatio != want {
		t.Errorf("query ratio %.3f, want %.3f", res.QueryRatio, want)
	}
	f := res.Failover
	if f.Node == "" || f.Customers < 1 || f.Jobs != f.Customers*clusterFailoverDocs {
		t.Errorf("failover: node %q holding %d customers, %d jobs", f.Node, f.Customers, f.Jobs)
	}
	if f.FirstAnswerMaxSeconds <= 0 || f.FirstAnswerMedianSeconds <= 0 || f.FirstAnswerMedianSeconds > f.FirstAnswerMaxSeconds {
		t.Errorf("failover: first answers max %.2f s, median %.2f s", f.FirstAnswerMaxSeconds, f.FirstAnswerMedianSeconds)
	}
	// Documents of many chunks each, uploaded just before the kill, are
	// not all done by then: the jobs' takeover was measured.
	if f.JobsPendingAtKill < 1 || f.JobsPendingAtKill > f.Jobs || f.JobsSucceededSeconds <= 0 {
		t.Errorf("failover: %d of %d jobs pending at the kill, all SUCCEEDED after %.2f s", f.JobsPendingAtKill, f.Jobs, f.JobsSucceededSeconds)
	}

	// The run filled its database, which another run refuses.
	if err := checkEmpty(context.Background(), db); err == nil {
		t.Error("a database the run filled is taken as empty")
	}
	if err := checkEmpty(context.Background(), pg.Database(t)); err != nil {
		t.Errorf("a new database: %v", err)
	}
}
