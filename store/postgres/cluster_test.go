package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/cluster"
	"github.com/docsift/docsift/internal/pgtest"
	"github.com/docsift/docsift/store"
)

// joined opens n stores on one database, each joined as a node.
func joined(t testing.TB, n int) []*Store {
	t.Helper()
	url := pgtest.Start(t).Database(t)
	var nodes []*Store
	for i := range n {
		s := open(t, url)
		if _, _, err := s.Join(fmt.Sprintf("http://127.0.0.1:%d", 9000+i)); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, s)
	}
	return nodes
}

func uploadTo(t testing.TB, s *Store, owner string) (*store.Document, *store.Job) {
	t.Helper()
	d := &store.Document{ProjectID: "prj_test", OwnerID: owner, Name: owner + ".txt", Format: "text"}
	j, err := s.CreateDocument(d, store.Bytes([]byte("text of "+owner)), store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return d, j
}

// exec runs SQL on the database behind s: the tests move the database's
// clock-dependent columns instead of waiting for time to pass.
func exec(t testing.TB, s *Store, sql string, args ...any) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// Each node claims exactly the jobs of the owners that the cluster
// package's rendezvous hashing places on it, and between them they claim
// every job.
func TestClusterClaimsFollowPlacement(t *testing.T) {
	nodes := joined(t, 3)
	live, err := nodes[0].LiveNodes()
	if err != nil || len(live) != 3 {
		t.Fatalf("LiveNodes = %v, %v; want 3", live, err)
	}
	const owners = 30
	for i := range owners {
		uploadTo(t, nodes[i%3], fmt.Sprintf("cus_%02d", i))
	}
	claimed := 0
	perNode := map[string]int{}
	for _, s := range nodes {
		for {
			j, _, err := s.ClaimJob(nil)
			if errors.Is(err, store.ErrNoJob) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := cluster.Holder(j.OwnerID, live)
			if want.ID != s.node {
				t.Fatalf("node %s claimed the job of %s, placed on %s", s.node, j.OwnerID, want.ID)
			}
			claimed++
			perNode[s.node]++
		}
	}
	if claimed != owners {
		t.Fatalf("claimed %d jobs of %d", claimed, owners)
	}
	if len(perNode) != 3 {
		t.Fatalf("jobs per node = %v; 30 owners on 3 nodes should reach all three", perNode)
	}
}

// A dead node's job is taken over once its heartbeat and lease are old;
// the dead node's late outcome is then refused, the new holder's counts.
func TestClusterLeaseTakeOver(t *testing.T) {
	nodes := joined(t, 2)
	a, b := nodes[0], nodes[1]
	live, _ := a.LiveNodes()
	owner := ownerPlacedOn(t, a.node, live)
	_, job := uploadTo(t, b, owner)
	if _, _, err := b.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("b claimed a job placed on a: %v", err)
	}
	j, _, err := a.ClaimJob(nil)
	if err != nil || j.ID != job.ID {
		t.Fatalf("a claimed %v, %v", j, err)
	}
	// While a lives and holds the lease, b cannot take the job.
	if _, _, err := b.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("b claimed a leased job: %v", err)
	}
	// a dies: its heartbeat and its lease age past their limits.
	exec(t, a, "UPDATE nodes SET heartbeat_at = now() - interval '1 minute' WHERE id = $1", a.node)
	exec(t, a, "UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1", job.ID)
	j, d, err := b.ClaimJob(nil)
	if err != nil || j.ID != job.ID || j.Attempts != 2 || d.Status != store.StatusProcessing {
		t.Fatalf("b's claim after a died = %+v, %v; want the job, second attempt", j, err)
	}
	if err := a.FinishJob(job.ID, 1, 1, ""); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a's late FinishJob = %v; want ErrLeaseLost", err)
	}
	if err := b.FinishJob(job.ID, 3, 1, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Job(job.ID); got.Status != store.StatusSucceeded || got.Chunks != 3 {
		t.Fatalf("job = %+v; want SUCCEEDED with b's 3 chunks", got)
	}
}

// A job whose node dies under it twice (its lease running out each time)
// fails for good: a document that kills nodes would otherwise go from node
// to node, killing each.
func TestClusterJobThatKillsNodesFails(t *testing.T) {
	nodes := joined(t, 2)
	a, b := nodes[0], nodes[1]
	live, _ := a.LiveNodes()
	owner := ownerPlacedOn(t, b.node, live)
	_, job := uploadTo(t, a, owner)
	for round := 1; round <= 2; round++ {
		j, _, err := b.ClaimJob(nil)
		if err != nil || j.ID != job.ID || j.Interrupted != round-1 {
			t.Fatalf("round %d: claimed %+v, %v", round, j, err)
		}
		// b dies with the job: its lease runs out.
		exec(t, a, "UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1", job.ID)
		if round == 1 {
			continue
		}
		// The next claim, on any node, counts the second death and fails it.
		if _, _, err := b.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
			t.Fatalf("a claim after the second death: %v, want ErrNoJob", err)
		}
	}
	j, err := a.Job(job.ID)
	if err != nil || j.Status != store.StatusFailed || j.Interrupted != 2 || !strings.Contains(j.Error, "stopped the server") {
		t.Fatalf("the job after its node died twice: %+v, %v", j, err)
	}
}

// Heartbeats renew the leases of the jobs a node runs, and only those.
func TestClusterHeartbeatRenewsLeases(t *testing.T) {
	a := joined(t, 1)[0]
	_, job := uploadTo(t, a, "cus_a")
	if _, _, err := a.ClaimJob(nil); err != nil {
		t.Fatal(err)
	}
	exec(t, a, "UPDATE jobs SET lease_until = now() + interval '1 second' WHERE id = $1", job.ID)
	if err := a.Heartbeat(); err != nil {
		t.Fatal(err)
	}
	var left float64
	if err := a.pool.QueryRow(context.Background(), "SELECT extract(epoch FROM lease_until - now()) FROM jobs WHERE id = $1", job.ID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left < jobLease.Seconds()-1 {
		t.Fatalf("lease has %.1fs left after a heartbeat; want about %s", left, jobLease)
	}
	if err := a.FinishJob(job.ID, 1, 1, ""); err != nil {
		t.Fatal(err)
	}
	if ids := a.leases.list(); len(ids) != 0 {
		t.Fatalf("leases held after the job ended: %v", ids)
	}
}

// A node that leaves cleanly hands its jobs over at once, and a restarted
// node does not requeue jobs other nodes run.
func TestClusterLeaveHandsJobsOver(t *testing.T) {
	nodes := joined(t, 2)
	a, b := nodes[0], nodes[1]
	live, _ := a.LiveNodes()
	owner := ownerPlacedOn(t, a.node, live)
	_, job := uploadTo(t, a, owner)
	if _, _, err := a.ClaimJob(nil); err != nil {
		t.Fatal(err)
	}
	if n, _, err := b.RequeueInterrupted(store.DefaultMaxInterrupted); err != nil || n != 0 {
		t.Fatalf("RequeueInterrupted on a node = %d, %v; want 0: a is running that job", n, err)
	}
	if err := a.Leave(); err != nil {
		t.Fatal(err)
	}
	j, _, err := b.ClaimJob(nil)
	if err != nil || j.ID != job.ID {
		t.Fatalf("b's claim after a left = %v, %v; want %s", j, err, job.ID)
	}
}

// Listen hears new jobs and changed chunks, committed ones only.
func TestClusterListen(t *testing.T) {
	a := joined(t, 1)[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := make(chan string, 16)
	go a.Listen(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), func(owner, node string) {}, func(id, owner string) {
		if owner == "cus_listen" {
			jobs <- id
		}
	})
	// The listener may not be listening yet: upload until it hears one.
	deadline := time.After(30 * time.Second)
	for heard := false; !heard; {
		_, job := uploadTo(t, a, "cus_listen")
		select {
		case id := <-jobs:
			heard = id == job.ID
		case <-deadline:
			t.Fatal("no job notification within 30s")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ownerPlacedOn finds an owner id that live places on node.
func ownerPlacedOn(t testing.TB, node string, live []store.Node) string {
	t.Helper()
	for i := range 1000 {
		owner := fmt.Sprintf("cus_%d", i)
		if h, _ := cluster.Holder(owner, live); h.ID == node {
			return owner
		}
	}
	t.Fatal("no owner placed on", node)
	return ""
}
