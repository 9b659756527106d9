package server_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/outbound"
)

type apiWebhook struct {
	WebhookID string   `json:"webhook_id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret"`
}

func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.a, e.b

	created := decodeAs[apiWebhook](t, e.postJSON(t, "/webhooks", a.key, map[string]any{"url": "https://app.example/hooks"}))
	if !strings.HasPrefix(created.WebhookID, "whk_") || !strings.HasPrefix(created.Secret, "whsec_") || len(created.Events) != 2 {
		t.Fatalf("created %+v: want an id, a secret and every event", created)
	}
	only := decodeAs[apiWebhook](t, e.postJSON(t, "/webhooks", a.key, map[string]any{"url": "http://127.0.0.1:9/x", "events": []string{"job.failed", "job.failed"}}))
	if len(only.Events) != 1 || only.Events[0] != "job.failed" {
		t.Errorf("events as given twice: %v", only.Events)
	}

	listed := e.get(t, "/webhooks", a.key)
	list := decodeAs[struct {
		Webhooks []apiWebhook `json:"webhooks"`
	}](t, listed)
	if len(list.Webhooks) != 2 || list.Webhooks[0].WebhookID != created.WebhookID {
		t.Fatalf("list: %+v", list.Webhooks)
	}
	// The secret is shown once, when created: a listing has no secret
	// field at all, not an empty one a client could take for the secret.
	if strings.Contains(string(listed.body), `"secret"`) {
		t.Errorf("the list has a secret field: %s", listed.body)
	}
	// Another project sees none of them, and reaches none.
	if other := decodeAs[struct {
		Webhooks []apiWebhook `json:"webhooks"`
	}](t, e.get(t, "/webhooks", b.key)); len(other.Webhooks) != 0 {
		t.Errorf("project B lists A's webhooks: %+v", other.Webhooks)
	}
	wantError(t, e.get(t, "/webhooks/"+created.WebhookID+"/deliveries", b.key), http.StatusNotFound)
	wantError(t, e.do(t, http.MethodDelete, "/webhooks/"+created.WebhookID, b.key, "", nil), http.StatusNotFound)

	if ds := decodeAs[struct {
		Deliveries []map[string]any `json:"deliveries"`
	}](t, e.get(t, "/webhooks/"+created.WebhookID+"/deliveries", a.key)); ds.Deliveries == nil {
		t.Error("deliveries of a new webhook: want an empty list, not null")
	}

	runBad(t, e, badCases{
		{name: "url missing", body: map[string]any{}, status: 400, want: []string{"url is required"}},
		{name: "url relative", body: map[string]any{"url": "/hooks"}, status: 400, want: []string{"absolute http or https"}},
		{name: "url not http", body: map[string]any{"url": "ftp://example.com/x"}, status: 400, want: []string{"http"}},
		{name: "url with credentials", body: map[string]any{"url": "https://u:p@example.com/x"}, status: 400, want: []string{"credentials"}},
		{name: "url with port 99999", body: map[string]any{"url": "http://127.0.0.1:99999/x"}, status: 400, want: []string{"port 99999 is not a port"}},
		{name: "url with port 0", body: map[string]any{"url": "http://127.0.0.1:0/x"}, status: 400, want: []string{"port 0 is not a port"}},
		{name: "url with a port but no host", body: map[string]any{"url": "http://:8080/x"}, status: 400, want: []string{"no host name"}},
		{name: "url too long", body: map[string]any{"url": "https://example.com/" + strings.Repeat("x", 3000)}, status: 400, want: []string{"url", "2048"}},
		{name: "events empty", body: map[string]any{"url": "https://example.com/x", "events": []string{}}, status: 400, want: []string{"events is empty"}},
		{name: "unknown event", body: map[string]any{"url": "https://example.com/x", "events": []string{"job.started"}}, status: 400, want: []string{`"job.started" is not an event`}},
		{name: "events not a list", body: map[string]any{"url": "https://example.com/x", "events": "job.failed"}, status: 400, want: []string{"field events must be an array, not a string"}},
		{name: "no key", key: "-", body: map[string]any{"url": "https://example.com/x"}, status: 401},
	}.defaults(a.key, "/webhooks"))
	wantError(t, e.get(t, "/webhooks/"+created.WebhookID+"/deliveries?limit=0", a.key), http.StatusBadRequest, "limit")
	wantError(t, e.get(t, "/webhooks/whk_nope/deliveries", a.key), http.StatusNotFound, "whk_nope")

	del := e.do(t, http.MethodDelete, "/webhooks/"+created.WebhookID, a.key, "", nil)
	if del.status != http.StatusOK {
		t.Fatalf("delete: %s", del)
	}
	wantError(t, e.do(t, http.MethodDelete, "/webhooks/"+created.WebhookID, a.key, "", nil), http.StatusNotFound)
}

// flakyDNS is a resolver of names, one of which cannot be looked up now.
type flakyDNS struct{ names }

func (f flakyDNS) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if host == "flaky.example" {
		return nil, &net.DNSError{Err: "i/o timeout", Name: host, IsTimeout: true, IsTemporary: true}
	}
	return f.names.LookupNetIP(ctx, network, host)
}

// With the default guard, endpoints inside the server's network are
// refused when registered, in words: the address, what it is and what the
// operator can do. Nothing is stored.
func TestWebhookAddressesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOptions) {
		o.cfg.WebhookGuard = &outbound.Guard{Resolver: flakyDNS{names{"internal.example": "10.1.2.3", "app.example": "93.184.215.14"}}}
	})
	key := e.a.key
	for _, c := range []struct {
		url    string
		status int
		want   []string
	}{
		{"http://127.0.0.1:5432/", 400, []string{"url: 127.0.0.1 is a loopback address, inside the server's network", "--allow-private-webhooks", "--webhook-allow-cidr 127.0.0.1/32"}},
		{"http://[::1]:8080/", 400, []string{"::1 is a loopback address"}},
		{"http://[::ffff:10.0.0.1]/", 400, []string{"::ffff:10.0.0.1 is a private address (RFC 1918)", "--webhook-allow-cidr 10.0.0.1/32"}},
		{"http://169.254.169.254/latest/meta-data/", 400, []string{"169.254.169.254 is a cloud metadata service's address", "--webhook-allow-cidr 169.254.169.254/32"}},
		{"http://[fd00:ec2::254]/", 400, []string{"cloud metadata"}},
		{"http://100.64.1.1/", 400, []string{"shared address"}},
		{"http://0.0.0.0:8080/", 400, []string{"unspecified address"}},
		{"http://internal.example/hooks", 400, []string{"url: internal.example resolves to 10.1.2.3, a private address (RFC 1918)"}},
		{"http://missing.example/hooks", 400, []string{"url: the host name missing.example has no address"}},
		{"http://flaky.example/hooks", 503, []string{"could not be looked up just now; try again"}},
	} {
		r := e.postJSON(t, "/webhooks", key, map[string]any{"url": c.url})
		wantError(t, r, c.status, c.want...)
	}
	if ws := decodeAs[struct {
		Webhooks []apiWebhook `json:"webhooks"`
	}](t, e.get(t, "/webhooks", key)); len(ws.Webhooks) != 0 {
		t.Errorf("refused endpoints were stored: %+v", ws.Webhooks)
	}
	if r := e.postJSON(t, "/webhooks", key, map[string]any{"url": "https://app.example/hooks"}); r.status != http.StatusOK {
		t.Errorf("an endpoint on the internet: %s", r)
	}
}

// A delivery's last_error shows the receiver's status, not what it wrote,
// unless the operator shows replies; a record an older docsift kept with
// the start of the answer shows no more.
func TestDeliveriesShowStatusNotBody(t *testing.T) {
	t.Parallel()
	for _, show := range []bool{false, true} {
		e := newEnv(t, func(o *envOptions) { o.cfg.ShowWebhookReplies = show })
		key := e.a.key
		hook := decodeAs[apiWebhook](t, e.postJSON(t, "/webhooks", key, map[string]any{"url": "https://app.example/hooks"}))
		e.uploadText(t, key, e.a.customers[0], "n.txt", "A document about lighthouses.")
		d, _, err := e.store.ClaimDelivery(time.Minute, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		const secret = "SECRET_DB_PASSWORD=hunter2"
		if err := e.store.DeliveryAttempted(d.ID, 500, "the endpoint answered 500 Internal Server Error: "+secret, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		ds := decodeAs[struct {
			Deliveries []struct {
				LastStatus int    `json:"last_status"`
				LastError  string `json:"last_error"`
			} `json:"deliveries"`
		}](t, e.get(t, "/webhooks/"+hook.WebhookID+"/deliveries", key))
		if len(ds.Deliveries) != 1 || ds.Deliveries[0].LastStatus != 500 {
			t.Fatalf("deliveries: %+v", ds.Deliveries)
		}
		got := ds.Deliveries[0].LastError
		if shown := strings.Contains(got, secret); shown != show || !strings.Contains(got, "500") {
			t.Errorf("replies shown %v: last_error %q", show, got)
		}
	}
}
