// Package webhook delivers docsift's events to the endpoints projects
// register: JSON bodies signed with HMAC-SHA256 over a timestamp and the
// body, retried with exponential back-off for three days, from a durable
// outbox in the store (a delivery is queued in the same transaction as the
// job outcome it reports, so a crash loses none; one cut mid-attempt is sent
// again, so receivers should deduplicate by event id).
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docsift/docsift/store"
)

// Delivery headers.
const (
	// SignatureHeader carries "t=UNIX,v1=HEX": HEX is the HMAC-SHA256,
	// keyed with the webhook's secret, of "UNIX." followed by the body.
	// Signing the time stops a captured delivery from being replayed
	// later; Verify refuses old ones.
	SignatureHeader = "Docsift-Signature"
	EventIDHeader   = "Docsift-Event-Id"
	EventHeader     = "Docsift-Event"
)

// Defaults of Config.
const (
	DefaultFirstRetry = 10 * time.Second
	DefaultMaxBackoff = time.Hour
	// DefaultRetryWindow is how long a delivery is retried: three days,
	// so a receiver down over a weekend still gets its events.
	DefaultRetryWindow = 72 * time.Hour
	// DefaultTimeout bounds one attempt; a receiver should answer at once
	// and do its work after.
	DefaultTimeout = 10 * time.Second
	// claimLease is how long a claimed delivery is held: an attempt's
	// timeout and then some. A sender that dies mid-attempt leaves it to be
	// retried when the lease ends.
	claimLease = 2 * time.Minute
	// maxReplyBytes of a receiver's answer are read; the rest is not ours.
	maxReplyBytes = 4 << 10
)

// Config tunes a Sender. The zero value of each field takes its default.
type Config struct {
	FirstRetry  time.Duration // the back-off after the first failure; it doubles
	MaxBackoff  time.Duration
	RetryWindow time.Duration // from the event, after which a delivery fails for good
	Timeout     time.Duration
}

func (c Config) withDefaults() Config {
	if c.FirstRetry <= 0 {
		c.FirstRetry = DefaultFirstRetry
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.RetryWindow <= 0 {
		c.RetryWindow = DefaultRetryWindow
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Attempts under way at once. An attempt to an endpoint that accepts and
// never answers holds its place for Config.Timeout, and a project has up
// to maxPerProject endpoints, each with a backlog: so that such a project
// costs only itself, a sender gives it maxPerProjectInFlight places, one
// per endpoint at most, and has maxInFlight in all. Eight projects must
// stall at once before a ninth waits for a place; a stop waits for the
// attempts in hand, all at once, at most Config.Timeout.
const (
	maxInFlight = 16
	// maxPerProjectInFlight is two so that one slow endpoint of a project
	// does not hold up its other endpoints.
	maxPerProjectInFlight = 2
)

// Sender sends the outbox's deliveries in the order they came due, to
// several webhooks at once, to each one at a time, and to each project
// at most maxPerProjectInFlight at a time.
type Sender struct {
	cfg    Config
	store  store.Backend
	client *http.Client
	wake   func() <-chan struct{} // closed when there may be new deliveries
	log    *slog.Logger

	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

// New returns a sender of st's outbox. wake returns a channel that is
// closed when new deliveries may have been queued (a job ended).
func New(st store.Backend, wake func() <-chan struct{}, cfg Config, log *slog.Logger) *Sender {
	cfg = cfg.withDefaults()
	return &Sender{
		cfg: cfg, store: st, wake: wake, log: log, stop: make(chan struct{}),
		client: &http.Client{
			Timeout: cfg.Timeout,
			// A redirect is an answer, not a delivery: following it would
			// send the signed body somewhere the project did not register.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Start sends until Shutdown. Deliveries the last process had in hand when
// it stopped are sent again first.
func (s *Sender) Start() error {
	n, err := s.store.ReleaseDeliveries()
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.Info("webhook deliveries interrupted by the last stop are sent again", "deliveries", n)
	}
	s.done.Add(1)
	go s.run()
	return nil
}

// Shutdown stops sending and waits for an attempt in progress (at most
// Config.Timeout), not for the deliveries queued after it: a backlog for a
// slow endpoint must not hold a server's stop.
func (s *Sender) Shutdown() {
	s.once.Do(func() { close(s.stop) })
	s.done.Wait()
}

func (s *Sender) run() {
	defer s.done.Done()
	var attempts sync.WaitGroup
	defer attempts.Wait() // a stop waits for the attempts in hand
	// The attempts under way: their webhooks, and how many each project
	// has. Each attempt sends its delivery's place to ended when it is
	// over.
	var busy inFlight
	ended := make(chan place, maxInFlight)
	for {
		select {
		case <-s.stop:
			return // the rest are sent after the restart
		case p := <-ended:
			busy.end(p)
			continue
		default:
		}
		var wake <-chan struct{}
		var err error
		if len(busy.webhooks) < maxInFlight {
			wake = s.wake()
			var d *store.Delivery
			var w *store.Webhook
			d, w, err = s.store.ClaimDelivery(claimLease, busy.webhooks, busy.fullProjects())
			if err == nil {
				p := place{webhook: w.ID, project: w.ProjectID}
				busy.start(p)
				attempts.Add(1)
				go func() {
					defer attempts.Done()
					s.attempt(d, w)
					ended <- p
				}()
				continue
			}
			if !errors.Is(err, store.ErrNoDelivery) {
				s.log.Error("claiming a webhook delivery failed", "err", err)
			}
		}
		// Nothing to claim now, or no room: wait for a delivery to come
		// due, a job to end, or an attempt to end. A delivery already due
		// while attempts are under way is a busy webhook's or project's,
		// and waits for an attempt to end.
		wait := time.Hour
		if due, ok := s.store.NextDeliveryDue(); ok && err != nil && (len(busy.webhooks) == 0 || time.Until(due) > 0) {
			wait = max(time.Until(due), 10*time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-wake:
			t.Stop()
		case p := <-ended:
			t.Stop()
			busy.end(p)
		case <-t.C:
		}
	}
}

// place is what an attempt under way holds.
type place struct{ webhook, project string }

// inFlight is a sender's attempts under way.
type inFlight struct {
	webhooks []string       // one attempt each
	projects map[string]int // attempts of each project with any
}

func (f *inFlight) start(p place) {
	if f.projects == nil {
		f.projects = map[string]int{}
	}
	f.webhooks = append(f.webhooks, p.webhook)
	f.projects[p.project]++
}

func (f *inFlight) end(p place) {
	f.webhooks = slices.DeleteFunc(f.webhooks, func(w string) bool { return w == p.webhook })
	if f.projects[p.project]--; f.projects[p.project] <= 0 {
		delete(f.projects, p.project)
	}
}

// fullProjects are the projects with as many attempts under way as one
// may have.
func (f *inFlight) fullProjects() []string {
	var full []string
	for p, n := range f.projects {
		if n >= maxPerProjectInFlight {
			full = append(full, p)
		}
	}
	return full
}

// attempt sends d once and records how it went.
func (s *Sender) attempt(d *store.Delivery, w *store.Webhook) {
	status, err := s.post(d, w)
	log := s.log.With("webhook", w.ID, "delivery", d.ID, "event", d.Event.Type, "attempt", d.Attempts+1)
	var retryAt time.Time
	msg := ""
	if err != nil {
		msg = err.Error()
		next := time.Now().Add(s.backoff(d.Attempts + 1))
		if next.Before(d.CreatedAt.Add(s.cfg.RetryWindow)) {
			retryAt = next
			log.Warn("webhook delivery failed; will retry", "err", err, "retry_at", retryAt)
		} else {
			msg = fmt.Sprintf("%s (gave up after %d attempts over %s)", msg, d.Attempts+1, s.cfg.RetryWindow)
			log.Warn("webhook delivery failed for good", "err", err)
		}
	}
	if err := s.store.DeliveryAttempted(d.ID, status, msg, retryAt); err != nil {
		log.Error("recording a webhook delivery failed; it is sent again", "err", err)
	}
}

// backoff is the wait after the n-th failed attempt: doubling from
// FirstRetry up to MaxBackoff, with ±10% jitter so that a receiver that
// comes back is not hit by every delivery at once.
func (s *Sender) backoff(n int) time.Duration {
	d := s.cfg.FirstRetry
	for i := 1; i < n && d < s.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, s.cfg.MaxBackoff)
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

// Payload is the JSON body of a delivery.
type Payload struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Data      JobData   `json:"data"`
}

// JobData is what a job event tells, as GET /jobs/{job_id} would.
type JobData struct {
	JobID      string `json:"job_id"`
	Status     string `json:"status"`
	OwnerID    string `json:"owner_id"`
	DocumentID string `json:"document_id"`
	Chunks     int    `json:"chunks"`
	Error      string `json:"error,omitempty"`
}

func payloadOf(ev store.Event) Payload {
	return Payload{ID: ev.ID, Type: ev.Type, CreatedAt: ev.At, Data: JobData{
		JobID: ev.JobID, Status: ev.Status, OwnerID: ev.OwnerID, DocumentID: ev.DocumentID, Chunks: ev.Chunks, Error: ev.Error,
	}}
}

// post sends one delivery. Any 2xx answer is a delivery; everything else,
// including a redirect, is a failure to retry.
func (s *Sender) post(d *store.Delivery, w *store.Webhook) (int, error) {
	body, err := json.Marshal(payloadOf(d.Event))
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, strings.NewReader(string(body)))
	if err != nil {
		return 0, fmt.Errorf("the webhook URL is unusable: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "docsift-webhooks")
	req.Header.Set(EventIDHeader, d.Event.ID)
	req.Header.Set(EventHeader, d.Event.Type)
	req.Header.Set(SignatureHeader, Sign(w.Secret, time.Now(), body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("the endpoint did not answer: %w", err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("the endpoint answered %s: %.200s", resp.Status, strings.TrimSpace(string(reply)))
	}
	return resp.StatusCode, nil
}

// Sign returns the signature header value of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte("."))
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a delivery's signature header against body, and that it
// was signed within tolerance of now: what a receiver written in Go calls.
func Verify(secret, header string, body []byte, tolerance time.Duration, now time.Time) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("webhook: malformed signature header")
	}
	if age := now.Sub(time.Unix(unix, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("webhook: signed %s from now, outside the tolerance of %s", age.Round(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return errors.New("webhook: signature does not match")
}

// Events are the events an endpoint can ask for.
var Events = []string{store.EventJobSucceeded, store.EventJobFailed}

// EventSet is the events an endpoint registered with events hears, in one
// order whoever registered it (the API or the CLI): each once, sorted;
// nil means all.
func EventSet(events []string) []string {
	if events == nil {
		events = Events
	}
	return slices.Compact(slices.Sorted(slices.Values(events)))
}

// maxPerProject bounds a project's endpoints: a handful is what a project
// needs, and each ended job queues a delivery to every one.
const maxPerProject = 20

// CheckRoom says whether a project that has have endpoints may register
// another.
func CheckRoom(have int) error {
	if have >= maxPerProject {
		return fmt.Errorf("the project has %d webhooks, the most it may have: delete one first", have)
	}
	return nil
}

// maxURLBytes bounds an endpoint's URL.
const maxURLBytes = 2048

// CheckEndpoint says what is wrong, if anything, with an endpoint's URL and
// events, in words for whoever registers it. nil events means all.
func CheckEndpoint(rawURL string, events []string) error {
	if rawURL == "" {
		return errors.New("url is required")
	}
	if len(rawURL) > maxURLBytes {
		return fmt.Errorf("url is %d bytes, over the limit of %d", len(rawURL), maxURLBytes)
	}
	// Addresses inside the operator's network are allowed: a self-hosted
	// docsift often notifies a backend beside it.
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return errors.New("url must be an absolute http or https URL without credentials, like https://app.example.com/hooks/docsift")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("url: port %s is not a port: ports go from 1 to 65535", p)
		}
	}
	if u.Hostname() == "" {
		return errors.New("url has no host name, like app.example.com in https://app.example.com/hooks/docsift")
	}
	if events != nil && len(events) == 0 {
		return fmt.Errorf("events is empty: give one or more of %s, or leave it out for all", strings.Join(Events, ", "))
	}
	for _, ev := range events {
		if !slices.Contains(Events, ev) {
			return fmt.Errorf("events: %q is not an event; the events are %s", ev, strings.Join(Events, ", "))
		}
	}
	return nil
}
