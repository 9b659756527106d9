package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// fakeStore is a cluster's store of one or more nodes: the live nodes are
// what the test sets, and Listen hands its callbacks to the test.
type fakeStore struct {
	mu    sync.Mutex
	live  []store.Node
	swept chan time.Duration

	listening chan listener
}

type listener struct {
	chunks func(owner, node string)
	job    func(id, owner string)
}

func newFakeStore() *fakeStore {
	return &fakeStore{swept: make(chan time.Duration, 16), listening: make(chan listener, 1)}
}

func (f *fakeStore) Join(url string) (string, string, error) { return "self", "secret", nil }
func (f *fakeStore) Heartbeat() error                        { return nil }
func (f *fakeStore) Leave() error                            { return nil }

func (f *fakeStore) LiveNodes() ([]store.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.live), nil
}

func (f *fakeStore) setLive(nodes ...store.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live = nodes
}

func (f *fakeStore) Listen(ctx context.Context, _ *slog.Logger, chunks func(owner, node string), job func(id, owner string)) {
	f.listening <- listener{chunks, job}
	<-ctx.Done()
}

func (f *fakeStore) SweepRateBuckets(idle time.Duration) (int, error) {
	select {
	case f.swept <- idle:
	default:
	}
	return 0, nil
}

// fakeEngine records what the member asked of it, each call also sent on
// calls; CatchUp fails for the owners in failing, once each.
type fakeEngine struct {
	mu      sync.Mutex
	got     []string
	failing map[string]bool
	calls   chan string
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{failing: map[string]bool{}, calls: make(chan string, 64)}
}

func (e *fakeEngine) record(call string) {
	e.mu.Lock()
	e.got = append(e.got, call)
	e.mu.Unlock()
	e.calls <- call
}

func (e *fakeEngine) PlacementChanged()        { e.record("placement") }
func (e *fakeEngine) JobsChanged(owner string) { e.record("jobs " + owner) }
func (e *fakeEngine) CatchUpAll() error        { e.record("catch up all"); return nil }

func (e *fakeEngine) CatchUp(owner string) error {
	e.record("catch up " + owner)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failing[owner] {
		delete(e.failing, owner)
		return errors.New("store unreachable")
	}
	return nil
}

func (e *fakeEngine) calledWith(call string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.got, call)
}

// next waits for the engine's next call.
func (e *fakeEngine) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-e.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the engine was asked nothing")
		return ""
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// run joins a member on st with a fast heartbeat and ties it to e; the
// returned function stops it and waits until it has let go.
func run(t *testing.T, st *fakeStore, e *fakeEngine) (*Member, listener, func()) {
	t.Helper()
	m, err := JoinMember(st, "http://self", time.Millisecond, quiet)
	if err != nil {
		t.Fatal(err)
	}
	m.retry = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	wait := m.Run(ctx, e)
	l := <-st.listening
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wait()
			m.Leave(context.Background())
		}
	}
	t.Cleanup(stop)
	return m, l, stop
}

// Another node's change to an owner's chunks is caught up, this node's
// own is not, and a missed notification catches up every owner.
func TestMemberCatchesUpOtherNodesChanges(t *testing.T) {
	st, e := newFakeStore(), newFakeEngine()
	_, l, stop := run(t, st, e)
	l.chunks("mine", "self")
	l.chunks("theirs", "other")
	if got := e.next(t); got != "catch up theirs" {
		t.Fatalf("engine asked %q, want to catch up theirs", got)
	}
	l.chunks("", "")
	if got := e.next(t); got != "catch up all" {
		t.Fatalf("engine asked %q after a missed notification, want to catch up all", got)
	}
	stop()
	if e.calledWith("catch up mine") {
		t.Error("this node's own change was caught up")
	}
}

// Another node's job of an owner wakes the engine for that owner.
func TestMemberPassesJobsOn(t *testing.T) {
	st, e := newFakeStore(), newFakeEngine()
	_, l, _ := run(t, st, e)
	l.job("job_1", "owner")
	if got := e.next(t); got != "jobs owner" {
		t.Fatalf("engine asked %q, want jobs owner", got)
	}
}

// A catch-up that fails is tried again without another notification.
func TestMemberRetriesFailedCatchUp(t *testing.T) {
	st, e := newFakeStore(), newFakeEngine()
	e.failing["owner"] = true
	_, l, _ := run(t, st, e)
	l.chunks("owner", "other")
	for i := range 2 {
		if got := e.next(t); got != "catch up owner" {
			t.Fatalf("call %d: engine asked %q, want to catch up owner", i+1, got)
		}
	}
}

// A change of the live nodes reaches the engine; the first list, read
// when the node joins, before there is an engine, reaches nothing.
func TestMemberTellsEngineOfPlacement(t *testing.T) {
	st, e := newFakeStore(), newFakeEngine()
	st.setLive(store.Node{ID: "self", URL: "http://self"})
	m, _, _ := run(t, st, e)
	if n := len(e.calls); n != 0 {
		t.Fatalf("engine asked %d things before placement changed", n)
	}
	if h, self := m.Node().Holder("any"); !self || h.ID != "self" {
		t.Fatalf("alone, the holder is %v (self %v)", h, self)
	}
	st.setLive(store.Node{ID: "other", URL: "http://other"}, store.Node{ID: "self", URL: "http://self"})
	if got := e.next(t); got != "placement" {
		t.Fatalf("engine asked %q, want placement", got)
	}
	if n := len(m.Node().Live()); n != 2 {
		t.Errorf("%d live nodes, want 2", n)
	}
}

// Idle rate-limit buckets are swept while the member runs.
func TestMemberSweepsRateBuckets(t *testing.T) {
	st, e := newFakeStore(), newFakeEngine()
	m, err := JoinMember(st, "http://self", time.Hour, quiet)
	if err != nil {
		t.Fatal(err)
	}
	m.sweepEvery = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	wait := m.Run(ctx, e)
	defer func() { cancel(); wait(); m.Leave(context.Background()) }()
	select {
	case idle := <-st.swept:
		if idle != rateBucketIdle {
			t.Errorf("swept buckets idle for %v, want %v", idle, rateBucketIdle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep")
	}
}
