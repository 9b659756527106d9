//go:build hostile

package hostile

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// receiverHost is the loopback address the suite's webhook receivers
// listen on. Servers allow it alone (--webhook-allow-cidr
// 127.0.0.5/32), as an operator allows one internal receiver, so that
// the rest of loopback (127.0.0.1, ::1, localhost) stays refused.
const receiverHost = "127.0.0.5"

// receiver is a webhook endpoint: it records the job of every delivery
// and when it came, and answers with status and body.
type receiver struct {
	url    string
	status int
	body   string
	hits   atomic.Int64

	mu   sync.Mutex
	jobs map[string]time.Time
}

// newReceiver listens on host (port chosen by the kernel) until the test
// ends, or until the suite ends when keep is set.
func newReceiver(t *testing.T, host string, status int, body string, keep bool) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{url: "http://" + l.Addr().String() + "/hook", status: status, body: body, jobs: map[string]time.Time{}}
	srv := &http.Server{Handler: r}
	go srv.Serve(l)
	if !keep {
		t.Cleanup(func() { srv.Close() })
	}
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.hits.Add(1)
	var ev struct {
		Data struct {
			JobID string `json:"job_id"`
		} `json:"data"`
	}
	b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if json.Unmarshal(b, &ev) == nil && ev.Data.JobID != "" {
		r.mu.Lock()
		if _, ok := r.jobs[ev.Data.JobID]; !ok {
			r.jobs[ev.Data.JobID] = time.Now()
		}
		r.mu.Unlock()
	}
	w.WriteHeader(r.status)
	io.WriteString(w, r.body)
}

// arrived says when the first delivery for job came.
func (r *receiver) arrived(job string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.jobs[job]
	return at, ok
}

// tenant is a project of a server, with a webhook to a receiver of its own.
type tenant struct {
	name, project, key string
	hook               *receiver
}

// newTenant creates a project on s whose webhook goes to a receiver that
// answers 200, kept until the suite ends when keep is set.
func newTenant(t *testing.T, s *server, name string, keep bool) *tenant {
	t.Helper()
	ten := &tenant{name: name}
	ten.project, ten.key = s.newProject(t, name)
	ten.hook = newReceiver(t, receiverHost, http.StatusOK, "ok", keep)
	s.must(t, "POST", "/webhooks", ten.key, map[string]any{"url": ten.hook.url})
	return ten
}

// works checks that the tenant is served as usual: a small text it
// uploads is SUCCEEDED within tenantJobBound, its webhook arrives within
// tenantWebhookBound of the upload, and a query finds it. It returns how
// long the job and the webhook took from the upload.
func (ten *tenant) works(t *testing.T, s *server, when string) (job, hook time.Duration) {
	t.Helper()
	job, hook, err := ten.served(t, s, when)
	if err != nil {
		t.Fatal(err)
	}
	return job, hook
}

// served is works returning what went wrong, for an attack that goes on
// to check more of it.
func (ten *tenant) served(t *testing.T, s *server, when string) (job, hook time.Duration, err error) {
	t.Helper()
	word := fmt.Sprintf("tenantword%08d", rand.IntN(1e8))
	start := time.Now()
	r := s.uploadText(t, ten.key, ten.project, "A short note for the other tenant, to be found by its word "+word+" among harbour tides.")
	if r.status != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: the other tenant's upload %s: %d %s", when, ten.name, r.status, truncated(r.body, 300))
	}
	id := r.str("job_id")
	for {
		s.requireAlive(t)
		j := s.job(t, ten.key, id)
		if ended(j) {
			job = time.Since(start)
			if j["status"] != "SUCCEEDED" {
				return 0, 0, fmt.Errorf("%s: the other tenant's job: %v", when, j)
			}
			break
		}
		if time.Since(start) > tenantJobBound {
			return 0, 0, fmt.Errorf("%s: the other tenant's small text was not indexed within %s: %v", when, tenantJobBound, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		if at, ok := ten.hook.arrived(id); ok {
			hook = at.Sub(start)
			break
		}
		if time.Since(start) > tenantWebhookBound {
			return 0, 0, fmt.Errorf("%s: the other tenant's webhook for job %s did not arrive within %s of its upload", when, id, tenantWebhookBound)
		}
		s.requireAlive(t)
		time.Sleep(20 * time.Millisecond)
	}
	q := s.must(t, "POST", "/query/project", ten.key, map[string]any{"project_id": ten.project, "query": word, "top_k": 3})
	if !strings.Contains(string(q.body), r.str("document_id")) {
		return 0, 0, fmt.Errorf("%s: the other tenant's query for %s did not find its document %s: %s", when, word, r.str("document_id"), truncated(q.body, 300))
	}
	figure(t, "%s: the other tenant's text SUCCEEDED within %s of its upload (bound %s), its webhook came %s after the upload (bound %s)",
		when, job.Round(10*time.Millisecond), tenantJobBound, hook.Round(10*time.Millisecond), tenantWebhookBound)
	return job, hook, nil
}

// The shared server: attacks that leave nothing behind that could change
// another's outcome run on one server, in turn. A test that fails marks
// it spoilt, and the next gets a fresh one, so that one attack's failure
// (the server dead, a backlog left) is not counted against the next.
var shared struct {
	s      *server
	b      *tenant // the other tenant, which every attack checks on
	spoilt bool
}

// sharedFlags are the shared server's flags beside baseFlags: a small
// subpage budget (the subpage attack's bound), no rate limit on session
// links (so that the session attack meets the pending cap, not the rate
// limit), and fewer connections than the default 4,096, so that the
// flood fills them with little kernel memory.
var sharedFlags = []string{
	"--subpage-budget", "64MiB", "--session-rate-limit", "0", "--max-connections", "1024",
}

// sharedServer returns the shared server and its other tenant, starting
// them when there are none or the last were spoilt.
func sharedServer(t *testing.T) (*server, *tenant) {
	t.Helper()
	if shared.s != nil && (shared.spoilt || !shared.s.alive()) {
		shared.s.kill9(t)
		shared.s = nil
	}
	if shared.s == nil {
		shared.spoilt = false
		shared.s = newServer(t, "shared", sharedFlags)
		shared.b = newTenant(t, shared.s, "tenant-b", true)
	}
	t.Cleanup(func() {
		if t.Failed() {
			shared.spoilt = true
		}
	})
	return shared.s, shared.b
}
