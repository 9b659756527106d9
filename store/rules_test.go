package store

import (
	"errors"
	"testing"
	"time"
)

func TestOtherHolder(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := &Document{ID: "doc_b", ExternalID: "x", Seq: 2, CreatedAt: at}
	older := &Document{ID: "doc_a", ExternalID: "x", Seq: 1, CreatedAt: at}
	newer := &Document{ID: "doc_c", ExternalID: "x", Seq: 3, CreatedAt: at}
	holding := func(h *Document, err error) func() (*Document, error) {
		return func() (*Document, error) { return h, err }
	}
	broken := errors.New("disk on fire")
	for _, c := range []struct {
		name    string
		d       *Document
		holder  func() (*Document, error)
		want    *Document
		wantErr error
	}{
		{"no external id", &Document{ID: "doc_z"}, holding(nil, broken), nil, nil},
		{"free", d, holding(nil, ErrNotFound), nil, nil},
		{"held by itself", d, holding(d, nil), nil, nil},
		{"held by an older upload", d, holding(older, nil), older, nil},
		{"held by a newer upload", d, holding(newer, nil), nil, ErrSuperseded},
		{"lookup fails", d, holding(nil, broken), nil, broken},
	} {
		got, err := OtherHolder(c.d, c.holder)
		if got != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
			t.Errorf("%s: OtherHolder = %v, %v; want %v, %v", c.name, got, err, c.want, c.wantErr)
		}
	}
}

func TestCreatedBeforeOrdersEveryPair(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	docs := []*Document{
		{ID: "doc_a", CreatedAt: at},                         // from before seqs
		{ID: "doc_b", CreatedAt: at},                         // the same time: by id
		{ID: "doc_0", CreatedAt: at.Add(time.Second)},        // later
		{ID: "doc_1", Seq: 1, CreatedAt: at.Add(-time.Hour)}, // a seq outranks time
	}
	for i, a := range docs {
		for j, b := range docs {
			if got, want := CreatedBefore(a, b), i < j; got != want {
				t.Errorf("CreatedBefore(%s, %s) = %v, want %v", a.ID, b.ID, got, want)
			}
		}
	}
}

func TestEventDeliveriesGoToListeners(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	hooks := []Webhook{
		{ID: "whk_1", Events: []string{EventJobSucceeded}},
		{ID: "whk_2", Events: []string{EventJobFailed}},
		{ID: "whk_3", Events: []string{EventJobFailed, EventJobSucceeded}},
	}
	ev := Event{ID: "evt_1", Type: EventJobSucceeded, At: at}
	got := EventDeliveries(hooks, ev)
	if len(got) != 2 || got[0].WebhookID != "whk_1" || got[1].WebhookID != "whk_3" {
		t.Fatalf("EventDeliveries = %+v, want one to whk_1 then one to whk_3", got)
	}
	for _, d := range got {
		if d.Status != DeliveryPending || !d.NextAttempt.Equal(at) || !d.CreatedAt.Equal(at) || d.Event.ID != ev.ID || !IsID(d.ID, PrefixDelivery) {
			t.Errorf("delivery %+v: want pending, due and created at the event's time, of the event", d)
		}
	}
	if got[0].ID == got[1].ID {
		t.Errorf("two deliveries share id %s", got[0].ID)
	}
}

func TestAfterInterruption(t *testing.T) {
	j := &Job{Status: StatusProcessing, Interrupted: 1, Chunks: 7, ChunksEmbedded: 5}
	if j.AfterInterruption(2) || j.Status != StatusPending || j.Chunks != 7 {
		t.Errorf("first interruption of two: %+v, want PENDING, chunks kept", j)
	}
	j.Status, j.Interrupted = StatusProcessing, 2
	if !j.AfterInterruption(2) || j.Status != StatusFailed || j.Chunks != 0 || j.ChunksEmbedded != 0 || j.Error == "" {
		t.Errorf("second interruption of two: %+v, want FAILED without chunks, with a reason", j)
	}
}

func TestOutcomes(t *testing.T) {
	if JobOutcome("") != StatusSucceeded || JobOutcome("no text") != StatusFailed {
		t.Error("JobOutcome: want SUCCEEDED without an error, FAILED with one")
	}
	if DeliveryOutcome("") != DeliveryDelivered || DeliveryOutcome("500") != DeliveryFailed {
		t.Error("DeliveryOutcome: want delivered without an error, failed with one")
	}
}

func TestNewAPIKeyKeepsAHintOnly(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	secret, k := NewAPIKey("prj_1", at)
	if k.Hint != secret[:keyHintLen] || len(secret) <= keyHintLen+16 || k.ProjectID != "prj_1" || !k.CreatedAt.Equal(at) {
		t.Errorf("NewAPIKey = %q, %+v", secret, k)
	}
	if h, again := HashSecret(secret), HashSecret(secret); h == secret || h != again {
		t.Error("HashSecret: want a stable hash that is not the secret")
	}
}
