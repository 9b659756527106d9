package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docsift/docsift/outbound"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"github.com/docsift/docsift/webhook"
)

// counted is an endpoint on 127.0.0.1 that answers every request with
// status and body, and counts them.
func counted(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// waitAttempted waits until every delivery of the webhooks has been tried
// at least once, and returns the latest of each.
func waitAttempted(t *testing.T, st *bolt.Store, webhooks ...string) []store.Delivery {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var out []store.Delivery
		for _, w := range webhooks {
			ds, err := st.Deliveries(w, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 1 && ds[0].Attempts > 0 {
				out = append(out, ds[0])
			}
		}
		if len(out) == len(webhooks) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d webhooks' deliveries were tried", len(out), len(webhooks))
		}
		time.Sleep(10 * time.Millisecond) // polling the store's record: there is nothing to wait on
	}
}

// With the default guard, deliveries to the server's own network are
// never sent: the record says why and what the operator can do, the same
// for an open port and a closed one, and the endpoints see nothing.
func TestDeliveriesToTheServersNetworkRefused(t *testing.T) {
	r := newRig(t, func(c *webhook.Config) { c.Guard = nil })
	p, _, err := r.store.CreateProject("prober")
	if err != nil {
		t.Fatal(err)
	}
	open, hits := counted(t, http.StatusInternalServerError, "SECRET_DB_PASSWORD=hunter2")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	var hooks []string
	for _, u := range []string{open.URL + "/admin", closed, "http://[::ffff:127.0.0.1]:" + strings.Split(open.URL, ":")[2]} {
		w, err := r.store.CreateWebhook(p.ID, u, webhook.Events)
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, w.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.engine.WaitJob(ctx, r.upload(t, p.ID, "A document.")); err != nil {
		t.Fatal(err)
	}
	ds := waitAttempted(t, r.store, hooks...)
	for _, d := range ds {
		if d.LastStatus != 0 || d.Status != store.DeliveryPending ||
			!strings.Contains(d.LastError, "127.0.0.1 is a loopback address, inside the server's network") ||
			!strings.Contains(d.LastError, "--allow-private-webhooks") || !strings.Contains(d.LastError, "--webhook-allow-cidr 127.0.0.1/32") {
			t.Errorf("refused delivery %+v: want no status and the refusal in words", d)
		}
	}
	if ds[0].LastError != ds[1].LastError {
		t.Errorf("an open port and a closed one are told apart:\n%s\n%s", ds[0].LastError, ds[1].LastError)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal endpoint had %d requests", n)
	}
}

// noSuchHost is a resolver that finds no name.
type noSuchHost struct{}

func (noSuchHost) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// syncBuffer is a log's buffer, written by the sender's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// switching is a resolver whose answer the test moves.
type switching struct{ addr atomic.Pointer[netip.Addr] }

func (s *switching) set(a string) {
	addr := netip.MustParseAddr(a)
	s.addr.Store(&addr)
}

func (s *switching) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{*s.addr.Load()}, nil
}

// A host name that passes when it is registered and resolves to loopback
// when a delivery goes out (DNS rebinding) gets no delivery.
func TestRebindingRefusedAtDelivery(t *testing.T) {
	dns := &switching{}
	guard := &outbound.Guard{Resolver: dns}
	r := newRig(t, func(c *webhook.Config) { c.Guard = guard })
	p, _, err := r.store.CreateProject("rebinder")
	if err != nil {
		t.Fatal(err)
	}
	internal, hits := counted(t, http.StatusOK, "")
	u := "http://rebind.example:" + strings.Split(internal.URL, ":")[2] + "/hook"
	dns.set("93.184.215.14")
	if err := webhook.CheckAddress(context.Background(), guard, u); err != nil {
		t.Fatalf("registration while the name is public: %v", err)
	}
	w, err := r.store.CreateWebhook(p.ID, u, webhook.Events)
	if err != nil {
		t.Fatal(err)
	}
	dns.set("127.0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.engine.WaitJob(ctx, r.upload(t, p.ID, "A document.")); err != nil {
		t.Fatal(err)
	}
	d := waitAttempted(t, r.store, w.ID)[0]
	if !strings.Contains(d.LastError, "127.0.0.1 is a loopback address") {
		t.Errorf("delivery after the name moved: %+v; want it refused", d)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal endpoint had %d requests", n)
	}
}

// A delivery's record shows a failed answer's status, not its body,
// unless the operator shows replies; then a short, sanitised start of it.
func TestRepliesShownOnlyWhenAllowed(t *testing.T) {
	answer := "SECRET_DB_PASSWORD=hunter2\x1b[2J\u202e reversed\n" + strings.Repeat("x", 5000)
	for _, show := range []bool{false, true} {
		r := newRig(t, func(c *webhook.Config) { c.ShowReplies = show })
		p, _, err := r.store.CreateProject("answered")
		if err != nil {
			t.Fatal(err)
		}
		srv, _ := counted(t, http.StatusInternalServerError, answer)
		w, err := r.store.CreateWebhook(p.ID, srv.URL, webhook.Events)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := r.engine.WaitJob(ctx, r.upload(t, p.ID, "A document.")); err != nil {
			t.Fatal(err)
		}
		d := waitAttempted(t, r.store, w.ID)[0]
		const status = "the endpoint answered 500 (Internal Server Error); a delivery needs a 2xx answer"
		if d.LastStatus != 500 || !strings.HasPrefix(d.LastError, status) {
			t.Errorf("show replies %v: record %+v; want the status in words", show, d)
		}
		shown := webhook.ShownError(d, show)
		switch {
		case !show && (strings.Contains(d.LastError, "SECRET") || shown != status):
			t.Errorf("replies not shown, yet the record says %q and the API %q", d.LastError, shown)
		case show && (!strings.Contains(shown, "its answer began: SECRET_DB_PASSWORD=hunter2 [2J reversed xxx") ||
			strings.ContainsAny(shown, "\x1b\u202e\n") || len(shown) > len(status)+250):
			t.Errorf("replies shown: the API says %q; want a short, sanitised start of the answer", shown)
		case show && webhook.ShownError(d, false) != status:
			t.Errorf("a record kept while replies were shown, shown once they are not: %q", webhook.ShownError(d, false))
		}
	}
	// What an older docsift kept shows no more.
	old := store.Delivery{LastStatus: 500, LastError: "the endpoint answered 500 Internal Server Error: SECRET_DB_PASSWORD=hunter2"}
	if got := webhook.ShownError(old, false); strings.Contains(got, "SECRET") || !strings.HasPrefix(got, "the endpoint answered 500 (Internal Server Error)") {
		t.Errorf("an older record is shown as %q", got)
	}
	old = store.Delivery{LastError: `the endpoint did not answer: Post "http://10.0.0.5:5432/": dial tcp 10.0.0.5:5432: connect: connection refused`}
	if got := webhook.ShownError(old, false); got != "the endpoint did not answer" {
		t.Errorf("an older record of a failed connection is shown as %q", got)
	}
}

// A webhook's URL, which may hold a token, is never written to the log,
// whatever went wrong: its id is.
func TestLogHasNoURLs(t *testing.T) {
	var logs syncBuffer
	r := newLoggedRig(t, &logs, func(c *webhook.Config) {
		c.Guard = &outbound.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Resolver: noSuchHost{}}
		c.Timeout = 300 * time.Millisecond
	})
	p, _, err := r.store.CreateProject("tokens")
	if err != nil {
		t.Fatal(err)
	}
	failing, _ := counted(t, http.StatusBadGateway, "down")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	const token = "tok_3f9a8b7c6d5e4f"
	var hooks []string
	for _, u := range []string{
		failing.URL + "/hooks/" + token,              // answers 502
		"http://" + closed + "/?key=" + token,        // refuses the connection
		"http://10.0.0.5/" + token,                   // refused by the guard
		"http://" + token + ".invalid/",              // does not resolve
		tarpit(t, new(atomic.Int64)) + "?t=" + token, // never answers
	} {
		w, err := r.store.CreateWebhook(p.ID, u, webhook.Events)
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, w.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.engine.WaitJob(ctx, r.upload(t, p.ID, "A document.")); err != nil {
		t.Fatal(err)
	}
	ds := waitAttempted(t, r.store, hooks...)
	for _, want := range []string{"answered 502", "refused the connection", "10.0.0.5 is a private address", "has no address", "did not answer within 300ms"} {
		found := false
		for _, d := range ds {
			found = found || strings.Contains(d.LastError, want)
		}
		if !found {
			t.Errorf("no delivery record says %q: %+v", want, ds)
		}
	}
	r.sender.Shutdown()
	log := logs.String()
	if strings.Contains(log, token) {
		t.Errorf("the log has a webhook's URL:\n%s", log)
	}
	for _, id := range hooks {
		if !strings.Contains(log, "webhook="+id) {
			t.Errorf("the log does not name webhook %s:\n%s", id, log)
		}
	}
	for _, d := range ds {
		if strings.Contains(d.LastError, token) {
			t.Errorf("a delivery record has its URL: %q", d.LastError)
		}
	}
}

// Registration refuses the server's network in words: the address, what
// it is and what the operator can do.
func TestCheckAddress(t *testing.T) {
	dns := &switching{}
	dns.set("10.1.2.3")
	strict := &outbound.Guard{Resolver: dns}
	ctx := context.Background()
	for _, c := range []struct {
		url  string
		want string
	}{
		{"http://127.0.0.1:8080/x", "url: 127.0.0.1 is a loopback address, inside the server's network, where webhooks may not go unless the server's operator allows it (docsift serve --allow-private-webhooks, or --webhook-allow-cidr 127.0.0.1/32)"},
		{"http://[::1]/x", "url: ::1 is a loopback address"},
		{"http://[::ffff:169.254.169.254]/latest/meta-data", "::ffff:169.254.169.254 is a cloud metadata service's address, where webhooks may not go unless the server's operator names it (docsift serve --webhook-allow-cidr 169.254.169.254/32)"},
		{"http://internal.example/x", "url: internal.example resolves to 10.1.2.3, a private address (RFC 1918), inside the server's network"},
	} {
		err := webhook.CheckAddress(ctx, strict, c.url)
		var ae *webhook.AddressError
		if !errors.As(err, &ae) || ae.Temporary || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckAddress(%s) = %v; want %q", c.url, err, c.want)
		}
	}
	if err := webhook.CheckAddress(ctx, &outbound.Guard{Resolver: dns, AllowPrivate: true}, "http://internal.example/x"); err != nil {
		t.Errorf("CheckAddress with private addresses allowed = %v", err)
	}
	if err := webhook.CheckAddress(ctx, strict, "https://93.184.215.14/x"); err != nil {
		t.Errorf("CheckAddress of a public address = %v", err)
	}
}
