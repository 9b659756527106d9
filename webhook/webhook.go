// Package webhook delivers docsift's events to the endpoints projects
// register: JSON bodies signed with HMAC-SHA256 over a timestamp and the
// body, retried with exponential back-off for three days, from a durable
// outbox in the store (a delivery is queued in the same transaction as the
// job outcome it reports, so a crash loses none; one interrupted mid-attempt is sent
// again, so receivers should deduplicate by event id).
//
// Endpoints are chosen by tenants, so deliveries connect through an
// outbound.Guard, which by default keeps them out of the operator's
// network (checked when an endpoint is registered, CheckAddress, and
// again at every connection), and a delivery's record says what a failed
// answer's status was, not what the receiver wrote, unless the operator
// shows replies. Neither records nor logs hold a webhook's URL, which may
// hold a token.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/outbound"
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
	// maxExcerptBytes of a failed answer are kept in the delivery's
	// record when the operator shows receivers' replies: enough to say
	// what went wrong, too little to copy a page out.
	maxExcerptBytes = 200
	// lookupTimeout bounds the look-up of an endpoint's host name when it
	// is registered.
	lookupTimeout = 5 * time.Second
)

// Config tunes a Sender. The zero value of each field takes its default.
type Config struct {
	FirstRetry  time.Duration // the back-off after the first failure; it doubles
	MaxBackoff  time.Duration
	RetryWindow time.Duration // from the event, after which a delivery fails for good
	Timeout     time.Duration
	// Guard decides which addresses deliveries may connect to; nil is
	// outbound's default, which refuses the operator's own network.
	Guard *outbound.Guard
	// ShowReplies keeps the start of a receiver's failed answer in the
	// delivery's record, where its project reads it (see ShownError).
	// Off, the record says the status alone: a receiver may be a
	// service inside the operator's network, allowed for one project,
	// whose answers are not for every project to read.
	ShowReplies bool
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
	store  store.DeliveryQueue
	client *http.Client
	wake   func() <-chan struct{} // closed when there may be new deliveries
	log    *slog.Logger

	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

// New returns a sender of st's outbox. wake returns a channel that is
// closed when new deliveries may have been queued (a job ended).
func New(st store.DeliveryQueue, wake func() <-chan struct{}, cfg Config, log *slog.Logger) *Sender {
	cfg = cfg.withDefaults()
	return &Sender{
		cfg: cfg, store: st, wake: wake, log: log, stop: make(chan struct{}),
		client: &http.Client{
			Timeout:   cfg.Timeout,
			Transport: guardOf(cfg.Guard).Transport(),
			// A redirect is an answer, not a delivery: following it would
			// send the signed body somewhere the project did not register.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// guardOf is g, or the default guard when g is nil.
func guardOf(g *outbound.Guard) *outbound.Guard {
	if g == nil {
		return &outbound.Guard{}
	}
	return g
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

// attempt sends d once and records how it went. Neither the record nor
// the log has the webhook's URL, which may hold a token.
func (s *Sender) attempt(d *store.Delivery, w *store.Webhook) {
	status, reply, err := s.post(d, w)
	log := s.log.With("webhook", w.ID, "delivery", d.ID, "event", d.Event.Type, "attempt", d.Attempts+1)
	var retryAt time.Time
	msg := ""
	if err != nil {
		msg = err.Error()
		next := time.Now().Add(s.backoff(d.Attempts + 1))
		if next.Before(d.CreatedAt.Add(s.cfg.RetryWindow)) {
			retryAt = next
			log.Warn("webhook delivery failed; will retry", "err", msg, "retry_at", retryAt)
		} else {
			msg = fmt.Sprintf("%s (gave up after %d attempts over %s)", msg, d.Attempts+1, s.cfg.RetryWindow)
			log.Warn("webhook delivery failed for good", "err", msg)
		}
		if reply != "" {
			msg += replyMarker + reply
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
// including a redirect, is a failure to retry, said in words (see
// attemptError). reply is the start of a failed answer, sanitised, when
// the operator shows replies.
func (s *Sender) post(d *store.Delivery, w *store.Webhook) (status int, reply string, err error) {
	body, err := json.Marshal(payloadOf(d.Event))
	if err != nil {
		return 0, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "", errors.New("the webhook's URL cannot be used: delete the webhook and register it again")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "docsift-webhooks")
	req.Header.Set(EventIDHeader, d.Event.ID)
	req.Header.Set(EventHeader, d.Event.Type)
	req.Header.Set(SignatureHeader, Sign(w.Secret, time.Now(), body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", s.attemptError(err)
	}
	defer resp.Body.Close()
	// Read, so that the connection can be used again; no more than a
	// bounded start of it.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, "", nil
	}
	if s.cfg.ShowReplies {
		reply = excerpt(answer)
	}
	return resp.StatusCode, reply, errors.New(statusMessage(resp.StatusCode))
}

// statusMessage says a receiver answered status, from the status alone:
// the reason phrase after it is the receiver's own text.
func statusMessage(status int) string {
	answered := fmt.Sprintf("the endpoint answered %d", status)
	if text := http.StatusText(status); text != "" {
		answered += " (" + text + ")"
	}
	if status/100 == 3 {
		return answered + "; a delivery needs a 2xx answer, and redirects are not followed"
	}
	return answered + "; a delivery needs a 2xx answer"
}

// replyMarker comes before the excerpt of an answer in a delivery's
// record; ShownError truncates there.
const replyMarker = "; its answer began: "

// excerpt is the start of a receiver's answer, as one line of printable
// text: at most maxExcerptBytes, control and format characters (which
// could rewrite a terminal or reorder text) as spaces.
func excerpt(answer []byte) string {
	text := strings.Map(func(r rune) rune {
		if unicode.In(r, unicode.Cc, unicode.Cf) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(answer), "\uFFFD"))
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= maxExcerptBytes {
		return text
	}
	end := maxExcerptBytes
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[:end] + "…"
}

// ShownError is what the record of delivery d says of its last attempt
// to the project that registered its webhook. Without replies shown it is
// the answer's status alone, whatever the record holds: a record written
// while replies were shown, or by an older docsift (which kept the first
// 200 bytes of every answer, and Go's words for a connection that
// failed), shows no more than a new one.
func ShownError(d store.Delivery, showReplies bool) string {
	switch {
	case showReplies || d.LastError == "":
		return d.LastError
	case d.LastStatus == 0:
		if strings.HasPrefix(d.LastError, "the endpoint did not answer: ") {
			return "the endpoint did not answer"
		}
		return d.LastError
	}
	shown, _, _ := strings.Cut(d.LastError, replyMarker)
	if !strings.HasPrefix(shown, statusMessage(d.LastStatus)) {
		shown = statusMessage(d.LastStatus)
	}
	return shown
}

// attemptError says in words why an attempt got no answer. The error the
// client returns names the URL, which may hold a token, in Go's words.
func (s *Sender) attemptError(err error) error {
	var refused *outbound.RefusedError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var netErr net.Error
	switch {
	case errors.As(err, &refused):
		return errors.New(refusal("the endpoint's address "+refused.Addr.String()+" is ", refused))
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return errors.New("the endpoint's host name has no address")
	case errors.As(err, &dnsErr):
		return errors.New("the endpoint's host name could not be looked up")
	case errors.As(err, &certErr):
		return errors.New("the endpoint's TLS certificate is not valid for its host name, or not signed by a known authority")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("the endpoint did not answer within %s", s.cfg.Timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("the endpoint refused the connection")
	}
	return errors.New("the connection to the endpoint failed")
}

// refusal says why the guard refused e's address and what the operator
// can do, after lead, which names the address: "10.0.0.5 is " gives
// "10.0.0.5 is a private address (RFC 1918), inside …".
func refusal(lead string, e *outbound.RefusedError) string {
	a := e.Addr.WithZone("").Unmap()
	cidr := netip.PrefixFrom(a, a.BitLen()).String()
	if e.Private {
		return fmt.Sprintf("%s%s, inside the server's network, where webhooks may not go unless the server's operator allows it (docsift serve --allow-private-webhooks, or --webhook-allow-cidr %s)", lead, e.What, cidr)
	}
	return fmt.Sprintf("%s%s, where webhooks may not go unless the server's operator names it (docsift serve --webhook-allow-cidr %s)", lead, e.What, cidr)
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
	// Where the host is, is CheckAddress's to say.
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return errors.New("url must be an absolute http or https URL without credentials, like https://app.example.com/hooks/docsift")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("url: port %s is not a port: ports go from 1 to 65535", clip.String(p))
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
			return fmt.Errorf("events: %s is not an event; the events are %s", clip.Quote(ev), strings.Join(Events, ", "))
		}
	}
	return nil
}

// AddressError is an endpoint whose host deliveries may not, or cannot
// now, go to.
type AddressError struct {
	msg string
	// Temporary says the host name could not be looked up just now: the
	// same URL may pass later.
	Temporary bool
}

func (e *AddressError) Error() string { return e.msg }

// CheckAddress says whether deliveries through guard g (nil: the default)
// may go to the host of rawURL, a URL CheckEndpoint accepted: nil, or an
// *AddressError in words for whoever registers it. A host name is looked
// up, and each of its addresses must pass: deliveries check again as they
// connect, so a name that moves later gets no further.
func CheckAddress(ctx context.Context, g *outbound.Guard, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return &AddressError{msg: "url must be an absolute http or https URL"}
	}
	host := u.Hostname()
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	err = guardOf(g).CheckHost(ctx, host)
	var refused *outbound.RefusedError
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused) && refused.Addr.String() == host:
		return &AddressError{msg: refusal("url: "+host+" is ", refused)}
	case errors.As(err, &refused):
		return &AddressError{msg: refusal("url: "+host+" resolves to "+refused.Addr.String()+", ", refused)}
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return &AddressError{msg: fmt.Sprintf("url: the host name %s has no address: check it", host)}
	}
	return &AddressError{msg: fmt.Sprintf("url: the host name %s could not be looked up just now; try again", host), Temporary: true}
}
