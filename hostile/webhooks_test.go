//go:build hostile

package hostile

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// secret is what the suite's stand-in for an internal service answers: a
// tenant must never read it.
const secret = "SECRET_DB_PASSWORD=hostile-suite-hunter2"

// Finding 2: webhooks into the operator's network. Loopback endpoints
// (127.0.0.1, ::1, localhost, and 127.0.0.1 written as IPv6) are refused
// with 400 and nothing ever reaches the service listening there; an
// endpoint the operator allows (--webhook-allow-cidr) that answers 500
// with a secret is called, and its deliveries show the status, never the
// body (--webhook-show-replies is off).
func TestWebhookSSRF(t *testing.T) {
	s, b := sharedServer(t)
	project, key := s.newProject(t, "ssrf")

	// The internal service, on one port on both loopbacks.
	v4, v6 := listenBothLoopbacks(t)
	internal := &receiver{status: http.StatusInternalServerError, body: secret, jobs: map[string]time.Time{}}
	for _, l := range []net.Listener{v4, v6} {
		srv := &http.Server{Handler: internal}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	port := strconv.Itoa(v4.Addr().(*net.TCPAddr).Port)
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/",
		"http://[::1]:" + port + "/",
		"http://localhost:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
	} {
		r := s.do(t, "POST", "/webhooks", key, map[string]any{"url": u})
		if r.status != http.StatusBadRequest {
			t.Errorf("registering %s: %d %s; want 400", u, r.status, truncated(r.body, 300))
			continue
		}
		figure(t, "%s refused: %s", u, r.str("error"))
	}

	// An endpoint the operator allows, answering 500 with the secret.
	allowed := newReceiver(t, receiverHost, http.StatusInternalServerError, secret, false)
	hook := s.must(t, "POST", "/webhooks", key, map[string]any{"url": allowed.url}).str("webhook_id")
	up := s.uploadText(t, key, project, "A note whose indexing sends a webhook to a receiver that answers with a secret.")
	if up.status != http.StatusOK {
		t.Fatalf("upload: %d %s", up.status, truncated(up.body, 300))
	}
	s.waitJob(t, key, up.str("job_id"), tenantJobBound, ended)
	b.works(t, s, "while the receiver answers 500")
	// Wait for two failed attempts: the first and its retry (after
	// --webhook-first-retry), so that every webhook of the project has
	// been tried in the meantime.
	var deliveries reply
	deadline := time.Now().Add(30 * time.Second)
	for {
		deliveries = s.must(t, "GET", "/webhooks/"+hook+"/deliveries", key, nil)
		if allowed.hits.Load() >= 2 && strings.Contains(string(deliveries.body), `"attempts":2`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the allowed receiver was not called twice within 30s (%d calls): %s", allowed.hits.Load(), truncated(deliveries.body, 500))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(string(deliveries.body), "SECRET") || strings.Contains(string(deliveries.body), "hunter2") {
		t.Errorf("the deliveries show the receiver's answer: %s", truncated(deliveries.body, 500))
	} else {
		figure(t, "deliveries to a receiver answering 500 with a secret show: %s", lastError(deliveries))
	}
	if n := internal.hits.Load(); n > 0 {
		t.Errorf("the service on loopback was called %d times", n)
	}
	b.works(t, s, "after the SSRF attempts")
	s.checkAcknowledged(t)
}

// lastError is the last_error fields of a deliveries list.
func lastError(r reply) string {
	ds, _ := r.json()["deliveries"].([]any)
	var out []string
	for _, d := range ds {
		if m, ok := d.(map[string]any); ok {
			out = append(out, fmt.Sprintf("%v %q", m["last_status"], m["last_error"]))
		}
	}
	return strings.Join(out, "; ")
}

// listenBothLoopbacks listens on 127.0.0.1 and ::1 on the same port.
func listenBothLoopbacks(t *testing.T) (v4, v6 net.Listener) {
	t.Helper()
	for range 20 {
		v4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		v6, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", v4.Addr().(*net.TCPAddr).Port))
		if err == nil {
			return v4, v6
		}
		v4.Close()
	}
	t.Fatal("no port free on both 127.0.0.1 and ::1")
	return nil, nil
}

// tarpit accepts connections and never answers them, until the test ends.
type tarpit struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newTarpit(t *testing.T) *tarpit {
	t.Helper()
	l, err := net.Listen("tcp", receiverHost+":0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tarpit{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tp.mu.Lock()
			tp.conns = append(tp.conns, c)
			tp.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		tp.mu.Lock()
		defer tp.mu.Unlock()
		for _, c := range tp.conns {
			c.Close()
		}
	})
	return tp
}

// Finding 3: one tenant's tarpits stall everyone's webhooks. Project A
// registers 20 endpoints (the most a project may have) that accept and
// never answer, and makes 1,200 deliveries for them (60 uploads); the
// other tenant's delivery still arrives within tenantWebhookBound.
func TestWebhookTarpits(t *testing.T) {
	s, b := sharedServer(t)
	project, key := s.newProject(t, "tarpits")
	tp := newTarpit(t)
	var hooks []string
	for i := range 20 {
		u := fmt.Sprintf("http://%s/pit%d", tp.l.Addr(), i)
		hooks = append(hooks, s.must(t, "POST", "/webhooks", key, map[string]any{"url": u}).str("webhook_id"))
	}
	// A shared server goes on after this test: the tarpits' backlog goes
	// with their webhooks.
	t.Cleanup(func() {
		for _, h := range hooks {
			s.do(t, "DELETE", "/webhooks/"+h, key, nil)
		}
	})
	var jobs []string
	for i := range 60 {
		r := s.uploadText(t, key, project, fmt.Sprintf("Tarpit project note number %d about slow receivers and queues.", i))
		if r.status != http.StatusOK {
			t.Fatalf("upload %d: %d %s", i, r.status, truncated(r.body, 300))
		}
		jobs = append(jobs, r.str("job_id"))
	}
	for _, j := range jobs {
		s.waitJob(t, key, j, tenantJobBound, ended)
	}
	// Every job's deliveries are queued now: 1,200 for the tarpits.
	_, hook := b.works(t, s, "with 1,200 deliveries queued for 20 tarpits")
	tp.mu.Lock()
	held := len(tp.conns)
	tp.mu.Unlock()
	figure(t, "the other tenant's webhook came %s after its upload, while the tarpits held %d connections", hook.Round(10*time.Millisecond), held)
	s.checkAcknowledged(t)
}
