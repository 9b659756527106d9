package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/outbound"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/docsift/docsift/webhook"
)

// receiver is a webhook endpoint on 127.0.0.1 that checks every delivery's
// signature and answers with fail's status until it is told otherwise.
type receiver struct {
	t      *testing.T
	secret func() string
	*httptest.Server

	mu       sync.Mutex
	fail     int // status to answer; 0: 200
	attempts map[string]int
	got      []webhook.Payload // deliveries answered 2xx, in order
	arrived  chan struct{}     // a delivery was answered 2xx
	tried    chan struct{}     // an attempt came, answered or not
}

func newReceiver(t *testing.T, secret func() string) *receiver {
	r := &receiver{t: t, secret: secret, attempts: map[string]int{}, arrived: make(chan struct{}, 100), tried: make(chan struct{}, 1)}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := webhook.Verify(r.secret(), req.Header.Get(webhook.SignatureHeader), body, time.Minute, time.Now()); err != nil {
		r.t.Errorf("delivery with a bad signature: %v", err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil || p.ID != req.Header.Get(webhook.EventIDHeader) || p.Type != req.Header.Get(webhook.EventHeader) {
		r.t.Errorf("delivery body %s does not match its headers (%v)", body, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts[p.ID]++
	select {
	case r.tried <- struct{}{}:
	default:
	}
	if r.fail != 0 {
		http.Error(w, "not now", r.fail)
		return
	}
	r.got = append(r.got, p)
	r.arrived <- struct{}{}
}

func (r *receiver) setFail(status int) {
	r.mu.Lock()
	r.fail = status
	r.mu.Unlock()
}

// waitFor waits until n deliveries were answered 2xx.
func (r *receiver) waitFor(n int) []webhook.Payload {
	r.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		r.mu.Lock()
		got := append([]webhook.Payload(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.arrived:
		case <-timeout:
			r.t.Fatalf("%d deliveries arrived, want %d", len(got), n)
		}
	}
}

type rig struct {
	store  *bolt.Store
	engine *ingest.Engine
	sender *webhook.Sender
}

// loopbackAllowed is the guard of the tests' senders: their receivers
// listen on 127.0.0.1, which the default guard refuses.
var loopbackAllowed = &outbound.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

func newRig(t *testing.T, configure ...func(*webhook.Config)) *rig {
	return newLoggedRig(t, io.Discard, configure...)
}

// newLoggedRig is newRig with the sender's log written to logTo.
func newLoggedRig(t *testing.T, logTo io.Writer, configure ...func(*webhook.Config)) *rig {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	e := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1}, log)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	cfg := webhook.Config{FirstRetry: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Guard: loopbackAllowed}
	for _, f := range configure {
		f(&cfg)
	}
	s := webhook.New(st, e.Ended, cfg, slog.New(slog.NewTextHandler(logTo, nil)))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		e.Shutdown(context.Background())
		st.Close()
	})
	return &rig{store: st, engine: e, sender: s}
}

// threeJobsThenAnAttempt ends three jobs of project, whose events its
// webhook hears, and waits for the first attempt to reach the endpoint,
// which says so on arrived.
func (r *rig) threeJobsThenAnAttempt(t *testing.T, project string, arrived <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, text := range []string{"First about tides.", "Second about ferries.", "Third about buoys."} {
		if _, err := r.engine.WaitJob(ctx, r.upload(t, project, text)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("no delivery reached the endpoint")
	}
}

func (r *rig) upload(t *testing.T, project, text string) string {
	t.Helper()
	job, _, err := r.engine.Submit(ingest.Upload{ProjectID: project, OwnerID: project, Name: "n.txt", Data: []byte(text)})
	if err != nil {
		t.Fatal(err)
	}
	return job.ID
}

func TestDeliveriesAreSignedRetriedAndRecorded(t *testing.T) {
	r := newRig(t)
	p, _, err := r.store.CreateProject("hooked")
	if err != nil {
		t.Fatal(err)
	}
	var all, onlyFailed *store.Webhook
	rcv := newReceiver(t, func() string { return all.Secret })
	failedRcv := newReceiver(t, func() string { return onlyFailed.Secret })
	if all, err = r.store.CreateWebhook(p.ID, rcv.URL, webhook.Events); err != nil {
		t.Fatal(err)
	}
	if onlyFailed, err = r.store.CreateWebhook(p.ID, failedRcv.URL, []string{store.EventJobFailed}); err != nil {
		t.Fatal(err)
	}
	other, _, _ := r.store.CreateProject("other")

	rcv.setFail(http.StatusInternalServerError)
	good := r.upload(t, p.ID, "A document about lighthouses.")
	bad := r.upload(t, p.ID, "%PDF-1.7\n1 0 obj << /Type /Catalog >> damaged beyond reading")
	r.upload(t, other.ID, "Another project's document: its events go nowhere here.")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{good, bad} {
		if _, err := r.engine.WaitJob(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Two failing attempts each, then the receiver recovers.
	for {
		rcv.mu.Lock()
		tried := len(rcv.attempts) == 2 && minCount(rcv.attempts) >= 2
		rcv.mu.Unlock()
		if tried {
			break
		}
		select {
		case <-rcv.tried:
		case <-ctx.Done():
			t.Fatal("the failing receiver was not retried")
		}
	}
	rcv.setFail(0)
	got := rcv.waitFor(2)
	types := map[string]string{}
	for _, p := range got {
		types[p.Data.JobID] = p.Type
	}
	if types[good] != store.EventJobSucceeded || types[bad] != store.EventJobFailed {
		t.Errorf("events %v", types)
	}
	onlyF := failedRcv.waitFor(1)
	if len(onlyF) != 1 || onlyF[0].Data.JobID != bad || onlyF[0].Data.Error == "" {
		t.Errorf("the job.failed-only endpoint got %+v", onlyF)
	}

	r.sender.Shutdown() // waits for the attempt in hand to be recorded
	ds, err := r.store.Deliveries(all.ID, 10)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	for _, d := range ds {
		if d.Status != store.DeliveryDelivered || d.Attempts < 3 || d.LastStatus != http.StatusOK || d.DeliveredAt.IsZero() {
			t.Errorf("delivery record %+v: want delivered after at least 3 attempts", d)
		}
	}
}

func minCount(m map[string]int) int {
	n := -1
	for _, v := range m {
		if n < 0 || v < n {
			n = v
		}
	}
	return n
}

func TestGivingUpAfterTheWindow(t *testing.T) {
	dir := t.TempDir()
	st, _ := bolt.Open(dir)
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	e := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1}, log)
	e.Start()
	defer e.Shutdown(context.Background())
	s := webhook.New(st, e.Ended, webhook.Config{FirstRetry: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, RetryWindow: 200 * time.Millisecond, Guard: loopbackAllowed}, log)
	s.Start()
	defer s.Shutdown()

	p, _, _ := st.CreateProject("down")
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down for good", http.StatusBadGateway) }))
	defer dead.Close()
	w, _ := st.CreateWebhook(p.ID, dead.URL, webhook.Events)
	job, _, _ := e.Submit(ingest.Upload{ProjectID: p.ID, OwnerID: p.ID, Name: "a", Data: []byte("text")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.WaitJob(ctx, job.ID)
	for {
		ds, _ := st.Deliveries(w.ID, 1)
		if len(ds) == 1 && ds[0].Status == store.DeliveryFailed {
			if !strings.Contains(ds[0].LastError, "502") || !strings.Contains(ds[0].LastError, "gave up") || ds[0].LastStatus != http.StatusBadGateway {
				t.Errorf("given-up delivery %+v", ds[0])
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never given up: %+v", ds)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"id":"evt_1"}`)
	now := time.Unix(1_800_000_000, 0)
	h := webhook.Sign("whsec_a", now, body)
	for _, c := range []struct {
		name, secret, header string
		body                 []byte
		at                   time.Time
		ok                   bool
	}{
		{"good", "whsec_a", h, body, now, true},
		{"other secret", "whsec_b", h, body, now, false},
		{"changed body", "whsec_a", h, []byte(`{"id":"evt_2"}`), now, false},
		{"replayed later", "whsec_a", h, body, now.Add(10 * time.Minute), false},
		{"garbage", "whsec_a", "v1=zz", body, now, false},
		{"second signature matches", "whsec_a", h + ",v1=" + strings.Repeat("0", 64), body, now, true},
	} {
		if err := webhook.Verify(c.secret, c.header, c.body, 5*time.Minute, c.at); (err == nil) != c.ok {
			t.Errorf("%s: Verify = %v", c.name, err)
		}
	}
}

// A stop does not wait for a backlog of deliveries to a slow endpoint: it
// waits for the attempt in progress, at most its timeout, and sends no
// more.
func TestShutdownLeavesTheBacklog(t *testing.T) {
	r := newRig(t, func(c *webhook.Config) { c.Timeout = 500 * time.Millisecond })
	p, _, err := r.store.CreateProject("hooked")
	if err != nil {
		t.Fatal(err)
	}
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body) // read: net/http then notices the client leave
		arrived <- struct{}{}
		select { // answers only when the test ends, or the sender gives up
		case <-release:
		case <-req.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	wh, err := r.store.CreateWebhook(p.ID, slow.URL, webhook.Events)
	if err != nil {
		t.Fatal(err)
	}
	r.threeJobsThenAnAttempt(t, p.ID, arrived)
	stopped := make(chan struct{})
	go func() {
		r.sender.Shutdown()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown did not return: it waits for the whole backlog")
	}
	if n := len(arrived); n != 0 {
		t.Errorf("%d more deliveries were sent after the first, during the stop", n)
	}
	ds, err := r.store.Deliveries(wh.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	attempts := 0
	for _, d := range ds {
		attempts += d.Attempts
	}
	if len(ds) != 3 || attempts != 1 {
		t.Errorf("%d deliveries, %d attempts; want 3 deliveries queued, the first tried once", len(ds), attempts)
	}
}

// One project's endpoint that is slow to answer holds up no other
// project's deliveries, and gets one attempt at a time itself.
func TestSlowEndpointHoldsUpNoOther(t *testing.T) {
	r := newRig(t, func(c *webhook.Config) { c.Timeout = 5 * time.Minute })
	a, _, err := r.store.CreateProject("slow to answer")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := r.store.CreateProject("quick to answer")
	if err != nil {
		t.Fatal(err)
	}
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	var mu sync.Mutex
	inFlight, most := 0, 0
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		arrived <- struct{}{}
		select {
		case <-release:
		case <-req.Context().Done():
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	defer slow.Close()
	var once sync.Once
	answer := func() { once.Do(func() { close(release) }) }
	defer answer() // before the sender's stop, which waits for the attempt in hand
	if _, err := r.store.CreateWebhook(a.ID, slow.URL, webhook.Events); err != nil {
		t.Fatal(err)
	}
	var quick *store.Webhook
	rcv := newReceiver(t, func() string { return quick.Secret })
	if quick, err = r.store.CreateWebhook(b.ID, rcv.URL, webhook.Events); err != nil {
		t.Fatal(err)
	}
	r.threeJobsThenAnAttempt(t, a.ID, arrived)
	job := r.upload(t, b.ID, "Fourth about harbours.")
	if got := rcv.waitFor(1); got[0].Data.JobID != job {
		t.Errorf("the quick endpoint got %+v, want job %s's event", got[0], job)
	}
	answer() // the slow endpoint answers from now on
	timeout := time.After(time.Minute)
	for range 2 {
		select {
		case <-arrived:
		case <-timeout:
			t.Fatal("the slow endpoint's backlog was not sent after it answered")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 1 {
		t.Errorf("the slow endpoint had %d attempts at once, want one at a time", most)
	}
}

// tarpit is an endpoint that accepts connections and never answers: each
// attempt to it holds its sender's slot for the whole attempt timeout.
// It counts the connections it took in accepted.
func tarpit(t *testing.T, accepted *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/hook"
}

// One project with the most endpoints it may have, every one a tarpit,
// and a backlog of events for each, costs only its owner: another
// project's delivery goes out as soon as its job ends, not after the
// tarpits' backlog. Before deliveries were bounded per project, the
// tarpits took every attempt slot and B's delivery waited for all of
// A's 1,200 (about 45 s with this test's 300 ms timeout, 25 minutes with
// the default 10 s).
func TestTarpitProjectStallsOnlyItself(t *testing.T) {
	const attemptTimeout = 300 * time.Millisecond
	// bound is how late B's delivery may arrive after its job ended: its
	// own attempt and the claim loop's turn, not one tarpit's timeout.
	const bound = 2 * time.Second
	r := newRig(t, func(c *webhook.Config) { c.Timeout = attemptTimeout })
	a, _, err := r.store.CreateProject("tarpits")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := r.store.CreateProject("answers")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	for range 20 {
		if _, err := r.store.CreateWebhook(a.ID, tarpit(t, &accepted), webhook.Events); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var jobs []string
	for i := range 60 {
		jobs = append(jobs, r.upload(t, a.ID, fmt.Sprintf("Tarpit document %d about tides.", i)))
	}
	for _, id := range jobs {
		if _, err := r.engine.WaitJob(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var quick *store.Webhook
	rcv := newReceiver(t, func() string { return quick.Secret })
	if quick, err = r.store.CreateWebhook(b.ID, rcv.URL, webhook.Events); err != nil {
		t.Fatal(err)
	}
	job := r.upload(t, b.ID, "The other project's document about harbours.")
	if _, err := r.engine.WaitJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	select {
	case <-rcv.arrived:
	case <-time.After(bound):
		t.Fatalf("project B's delivery had not arrived %s after its job ended, behind project A's tarpits", bound)
	}
	t.Logf("project B's delivery arrived %s after its job ended", time.Since(ended).Round(time.Millisecond))
	if accepted.Load() == 0 {
		t.Error("no attempt reached project A's tarpits: the test shows nothing")
	}
}
