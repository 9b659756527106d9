package server_test

import (
	"net/http"
	"strings"
	"testing"
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
