package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// Webhooks is the slice of webhooks and the outbox of their deliveries,
// with what it takes to make events: a project, and jobs that end.
type Webhooks interface {
	store.ProjectStore
	store.DocumentStore
	store.JobStore
	store.WebhookStore
	store.DeliveryQueue
	SetClock(now func() time.Time)
}

// RunWebhooks runs every test of the Webhooks slice, each on a new store.
func RunWebhooks(t *testing.T, open func(t *testing.T) Webhooks) {
	t.Run("WebhooksCreateListDelete", func(t *testing.T) { webhooksCreateListDelete(t, open(t)) })
	t.Run("EndedJobsQueueDeliveries", func(t *testing.T) { endedJobsQueueDeliveries(t, open(t)) })
	t.Run("DeliveriesClaimedByLease", func(t *testing.T) { deliveriesClaimedByLease(t, open(t)) })
	t.Run("ReleaseDeliveries", func(t *testing.T) { releaseDeliveries(t, open(t)) })
	t.Run("DeleteWebhookDropsDeliveries", func(t *testing.T) { deleteWebhookDropsDeliveries(t, open(t)) })
	t.Run("ConcurrentClaimsTakeEachDeliveryOnce", func(t *testing.T) { concurrentDeliveryClaims(t, open(t)) })
	t.Run("BusyWebhooksPassedOver", func(t *testing.T) { busyWebhooksPassedOver(t, open(t)) })
	t.Run("BusyProjectsPassedOver", func(t *testing.T) { busyProjectsPassedOver(t, open(t)) })
}

// busyProjectsPassedOver: a claim passes over every delivery of the
// projects a sender names as busy, however many of theirs are due ahead
// of the others', and still claims the others' oldest first.
func busyProjectsPassedOver(t *testing.T, s Webhooks) {
	c := newClock(s)
	a := mustProject(t, s, "tarpits")
	b := mustProject(t, s, "answers")
	other := mustProject(t, s, "another")
	// More of a's deliveries due ahead of b's than a claim reads past
	// of busy webhooks: 20 webhooks, 60 events.
	var tarpits []string
	for i := range 20 {
		tarpits = append(tarpits, mustWebhook(t, s, a.ID, fmt.Sprintf("https://tarpit%d.example.test", i), allEvents).ID)
	}
	for range 60 {
		endJob(t, s, a.ID, "alice", 1, "")
		c.Advance(time.Millisecond)
	}
	quick := mustWebhook(t, s, b.ID, "https://quick.example.test", allEvents)
	slow := mustWebhook(t, s, other.ID, "https://slow.example.test", allEvents)
	quicker := mustWebhook(t, s, other.ID, "https://quicker.example.test", allEvents)
	first := endJob(t, s, other.ID, "carol", 1, "") // one each to slow and quicker
	c.Advance(time.Second)
	bJob := endJob(t, s, b.ID, "bob", 1, "")
	c.Advance(time.Second)

	if d, w, err := s.ClaimDelivery(time.Minute, nil, nil); err != nil || w.ProjectID != a.ID {
		t.Fatalf("claim with none busy = %+v to %+v, %v; want one of a's, due first", d, w, err)
	}
	d, w, err := s.ClaimDelivery(time.Minute, nil, []string{a.ID})
	if err != nil || w.ID != slow.ID || d.Event.JobID != first.ID {
		t.Fatalf("claim with a busy = %+v to %+v, %v; want the oldest of the others, %s's to the slow webhook", d, w, err, first.ID)
	}
	// The slow webhook's project is not busy, only the webhook: its other
	// webhook's delivery, due with it, goes before b's.
	d, w, err = s.ClaimDelivery(time.Minute, []string{slow.ID}, []string{a.ID})
	if err != nil || w.ID != quicker.ID || d.Event.JobID != first.ID {
		t.Fatalf("claim with a and the slow webhook busy = %+v to %+v, %v; want %s's to the quicker webhook", d, w, err, first.ID)
	}
	d, w, err = s.ClaimDelivery(time.Minute, tarpits[:1], []string{a.ID, other.ID})
	if err != nil || w.ID != quick.ID || d.Event.JobID != bJob.ID {
		t.Fatalf("claim with a and the other project busy = %+v to %+v, %v; want b's to the quick webhook", d, w, err)
	}
	if d, _, err := s.ClaimDelivery(time.Minute, nil, []string{a.ID, b.ID, other.ID}); !errors.Is(err, store.ErrNoDelivery) {
		t.Fatalf("claim with every project busy = %+v, %v; want ErrNoDelivery", d, err)
	}
	if d, w, err := s.ClaimDelivery(time.Minute, nil, []string{b.ID, other.ID}); err != nil || w.ProjectID != a.ID {
		t.Fatalf("claim with a no longer busy = %+v to %+v, %v; want a's next", d, w, err)
	}
}

// busyWebhooksPassedOver: a claim passes over the deliveries of the
// webhooks a sender names as busy, the oldest of the others first, and
// finds none when only busy ones are due.
func busyWebhooksPassedOver(t *testing.T, s Webhooks) {
	c := newClock(s)
	p := mustProject(t, s, "acme")
	slow := mustWebhook(t, s, p.ID, "https://slow.example.test", allEvents)
	a := endJob(t, s, p.ID, "alice", 1, "") // one delivery to slow
	c.Advance(time.Second)
	endJob(t, s, p.ID, "alice", 2, "")
	c.Advance(time.Second)
	quick := mustWebhook(t, s, p.ID, "https://quick.example.test", allEvents)
	b := endJob(t, s, p.ID, "alice", 3, "") // one to each
	first, w, err := s.ClaimDelivery(time.Minute, nil, nil)
	if err != nil || w.ID != slow.ID || first.Event.JobID != a.ID {
		t.Fatalf("first claim = %+v to %+v, %v; want a's to the slow webhook", first, w, err)
	}
	d, w, err := s.ClaimDelivery(time.Minute, []string{slow.ID}, nil)
	if err != nil || w.ID != quick.ID || d.Event.JobID != b.ID {
		t.Fatalf("claim with the slow webhook busy = %+v to %+v, %v; want b's to the quick one", d, w, err)
	}
	if d, _, err := s.ClaimDelivery(time.Minute, []string{slow.ID, quick.ID}, nil); !errors.Is(err, store.ErrNoDelivery) {
		t.Fatalf("claim with both busy = %+v, %v; want ErrNoDelivery", d, err)
	}
	if d, w, err := s.ClaimDelivery(time.Minute, []string{quick.ID}, nil); err != nil || w.ID != slow.ID {
		t.Fatalf("claim with the quick webhook busy = %+v to %+v, %v; want the slow one's next", d, w, err)
	}
}

var allEvents = []string{store.EventJobFailed, store.EventJobSucceeded}

func mustProject(t *testing.T, s Webhooks, name string) *store.Project {
	t.Helper()
	p, _, err := s.CreateProject(name)
	if err != nil {
		t.Fatalf("CreateProject(%s): %v", name, err)
	}
	return p
}

func mustWebhook(t *testing.T, s Webhooks, projectID, url string, events []string) *store.Webhook {
	t.Helper()
	w, err := s.CreateWebhook(projectID, url, events)
	if err != nil {
		t.Fatalf("CreateWebhook(%s): %v", url, err)
	}
	return w
}

// endJob uploads a document to the project, runs its job and ends it with
// errMsg (empty: SUCCEEDED), and returns the job as it ended.
func endJob(t *testing.T, s Webhooks, projectID, owner string, chunks int, errMsg string) *store.Job {
	t.Helper()
	d := &store.Document{ProjectID: projectID, OwnerID: owner, Name: "doc", Format: "text"}
	if _, err := s.CreateDocument(d, store.Bytes([]byte(store.NewID("content"))), store.ProjectLimits{}); err != nil {
		t.Fatalf("CreateDocument: %v", err)
	}
	j, _, err := s.ClaimJob(nil)
	if err != nil || j.DocumentID != d.ID {
		t.Fatalf("ClaimJob = %+v, %v; want the job of %s", j, err, d.ID)
	}
	if err := s.FinishJob(j.ID, chunks, 1, errMsg); err != nil {
		t.Fatalf("FinishJob: %v", err)
	}
	return j
}

func mustDeliveries(t *testing.T, s Webhooks, webhookID string, limit int) []store.Delivery {
	t.Helper()
	ds, err := s.Deliveries(webhookID, limit)
	if err != nil {
		t.Fatalf("Deliveries(%s): %v", webhookID, err)
	}
	return ds
}

// delivery returns the delivery id of webhookID as the log has it now.
func delivery(t *testing.T, s Webhooks, webhookID, id string) store.Delivery {
	t.Helper()
	for _, d := range mustDeliveries(t, s, webhookID, 100) {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("delivery %s is not in webhook %s's log", id, webhookID)
	return store.Delivery{}
}

func mustClaimDelivery(t *testing.T, s Webhooks, lease time.Duration) (*store.Delivery, *store.Webhook) {
	t.Helper()
	d, w, err := s.ClaimDelivery(lease, nil, nil)
	if err != nil {
		t.Fatalf("ClaimDelivery: %v", err)
	}
	return d, w
}

func noDeliveryDue(t *testing.T, s Webhooks) {
	t.Helper()
	if d, _, err := s.ClaimDelivery(time.Minute, nil, nil); !errors.Is(err, store.ErrNoDelivery) {
		t.Fatalf("ClaimDelivery = %+v, %v; want ErrNoDelivery", d, err)
	}
}

func webhooksCreateListDelete(t *testing.T, s Webhooks) {
	c := newClock(s)
	p := mustProject(t, s, "acme")
	other := mustProject(t, s, "other")
	a := mustWebhook(t, s, p.ID, "https://a.example.test/hook", allEvents)
	if !strings.HasPrefix(a.ID, store.PrefixWebhook) || a.ProjectID != p.ID || a.URL != "https://a.example.test/hook" ||
		strings.Join(a.Events, ",") != strings.Join(allEvents, ",") || !strings.HasPrefix(a.Secret, "whsec_") ||
		len(a.Secret) < len("whsec_")+16 || !a.CreatedAt.Equal(c.Now()) {
		t.Fatalf("created webhook = %+v", a)
	}
	c.Advance(time.Second)
	b := mustWebhook(t, s, p.ID, "https://b.example.test/hook", []string{store.EventJobFailed})
	mustWebhook(t, s, other.ID, "https://c.example.test/hook", allEvents)
	if b.Secret == a.Secret {
		t.Fatal("two webhooks share a secret")
	}
	got, err := s.Webhook(b.ID)
	if err != nil || got.ID != b.ID || got.ProjectID != p.ID || got.URL != b.URL || strings.Join(got.Events, ",") != store.EventJobFailed ||
		got.Secret != b.Secret || !got.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("Webhook = %+v, %v; want %+v", got, err, b)
	}
	ws, err := s.Webhooks(p.ID)
	if err != nil || len(ws) != 2 || ws[0].ID != a.ID || ws[1].ID != b.ID || ws[0].Secret != a.Secret {
		t.Fatalf("Webhooks = %+v, %v; want a then b", ws, err)
	}
	if ws, err := s.Webhooks("prj_nope"); !errors.Is(err, store.ErrNotFound) || len(ws) != 0 {
		t.Fatalf("Webhooks(unknown project) = %+v, %v; want none and ErrNotFound", ws, err)
	}
	if _, err := s.CreateWebhook("prj_nope", "https://x.example.test", allEvents); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateWebhook(unknown project): err = %v, want ErrNotFound", err)
	}
	if _, err := s.Webhook("whk_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Webhook(unknown): err = %v, want ErrNotFound", err)
	}

	if err := s.DeleteWebhook(a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Webhook(a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted webhook: err = %v, want ErrNotFound", err)
	}
	if ws, _ := s.Webhooks(p.ID); len(ws) != 1 || ws[0].ID != b.ID {
		t.Fatalf("Webhooks after delete = %+v; want b", ws)
	}
	if err := s.DeleteWebhook(a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: err = %v, want ErrNotFound", err)
	}
}

func endedJobsQueueDeliveries(t *testing.T, s Webhooks) {
	c := newClock(s)
	p := mustProject(t, s, "acme")
	other := mustProject(t, s, "other")
	all := mustWebhook(t, s, p.ID, "https://all.example.test", allEvents)
	c.Advance(time.Second)
	failed := mustWebhook(t, s, p.ID, "https://failed.example.test", []string{store.EventJobFailed})
	elsewhere := mustWebhook(t, s, other.ID, "https://other.example.test", allEvents)
	if _, ok := s.NextDeliveryDue(); ok {
		t.Fatal("NextDeliveryDue reports a delivery before any event")
	}

	c.Advance(time.Minute)
	t1 := c.Now()
	ok := endJob(t, s, p.ID, "alice", 5, "")
	ds := mustDeliveries(t, s, all.ID, 10)
	if len(ds) != 1 {
		t.Fatalf("deliveries of a succeeded job to the all-events webhook: %+v; want 1", ds)
	}
	d, ev := ds[0], ds[0].Event
	if !strings.HasPrefix(d.ID, store.PrefixDelivery) || d.WebhookID != all.ID || d.Status != store.DeliveryPending ||
		d.Attempts != 0 || d.LastStatus != 0 || d.LastError != "" || d.Claimed || !d.CreatedAt.Equal(t1) ||
		!d.NextAttempt.Equal(t1) || !d.DeliveredAt.IsZero() {
		t.Fatalf("queued delivery = %+v", d)
	}
	if !strings.HasPrefix(ev.ID, store.PrefixEvent) || ev.Type != store.EventJobSucceeded || ev.JobID != ok.ID ||
		ev.OwnerID != "alice" || ev.DocumentID != ok.DocumentID || ev.Status != store.StatusSucceeded || ev.Error != "" ||
		ev.Chunks != 5 || !ev.At.Equal(t1) {
		t.Fatalf("event of a succeeded job = %+v", ev)
	}
	if ds := mustDeliveries(t, s, failed.ID, 10); len(ds) != 0 {
		t.Fatalf("a job.failed webhook got a job.succeeded delivery: %+v", ds)
	}
	if next, ok := s.NextDeliveryDue(); !ok || !next.Equal(t1) {
		t.Fatalf("NextDeliveryDue = %v, %v; want %v", next, ok, t1)
	}

	c.Advance(time.Minute)
	bad := endJob(t, s, p.ID, "bob", 0, "unreadable")
	ds = mustDeliveries(t, s, all.ID, 10)
	fs := mustDeliveries(t, s, failed.ID, 10)
	if len(ds) != 2 || len(fs) != 1 {
		t.Fatalf("after a failed job: %d deliveries to all, %d to failed; want 2 and 1", len(ds), len(fs))
	}
	ev = ds[0].Event // newest first
	if ev.Type != store.EventJobFailed || ev.JobID != bad.ID || ev.OwnerID != "bob" || ev.Status != store.StatusFailed ||
		ev.Error != "unreadable" || ev.Chunks != 0 || !ev.At.Equal(c.Now()) || ds[1].Event.JobID != ok.ID {
		t.Fatalf("deliveries to all = %+v; want the failed job's event, then the succeeded one's", ds)
	}
	if fs[0].Event.ID != ev.ID || fs[0].ID == ds[0].ID || fs[0].WebhookID != failed.ID {
		t.Fatalf("delivery to failed = %+v; want its own delivery of event %s", fs[0], ev.ID)
	}
	if ds := mustDeliveries(t, s, all.ID, 1); len(ds) != 1 || ds[0].Event.JobID != bad.ID {
		t.Fatalf("Deliveries(limit 1) = %+v; want the newest", ds)
	}
	if ds := mustDeliveries(t, s, elsewhere.ID, 10); len(ds) != 0 {
		t.Fatalf("another project's webhook got deliveries: %+v", ds)
	}
	if ds := mustDeliveries(t, s, "whk_nope", 10); len(ds) != 0 {
		t.Fatalf("Deliveries(unknown) = %+v", ds)
	}
	if next, ok := s.NextDeliveryDue(); !ok || !next.Equal(t1) {
		t.Fatalf("NextDeliveryDue = %v, %v; want still %v", next, ok, t1)
	}
}

func deliveriesClaimedByLease(t *testing.T, s Webhooks) {
	c := newClock(s)
	p := mustProject(t, s, "acme")
	w := mustWebhook(t, s, p.ID, "https://hook.example.test", allEvents)
	noDeliveryDue(t, s)
	a := endJob(t, s, p.ID, "alice", 1, "")
	c.Advance(time.Second)
	b := endJob(t, s, p.ID, "alice", 2, "")

	const lease = time.Minute
	leaseEnd := c.Now().Add(lease)
	da, dw := mustClaimDelivery(t, s, lease)
	if da.Event.JobID != a.ID || !da.Claimed || !da.NextAttempt.Equal(leaseEnd) || da.Attempts != 0 ||
		dw.ID != w.ID || dw.URL != w.URL || dw.Secret != w.Secret {
		t.Fatalf("first claim = %+v of %+v; want a's delivery, claimed until %v, to %s", da, dw, leaseEnd, w.ID)
	}
	if logged := delivery(t, s, w.ID, da.ID); !logged.Claimed || !logged.NextAttempt.Equal(leaseEnd) {
		t.Fatalf("claimed delivery in the log = %+v", logged)
	}
	db, _ := mustClaimDelivery(t, s, lease)
	if db.Event.JobID != b.ID {
		t.Fatalf("second claim = %+v; want b's delivery", db)
	}
	noDeliveryDue(t, s)
	if next, ok := s.NextDeliveryDue(); !ok || !next.Equal(leaseEnd) {
		t.Fatalf("NextDeliveryDue = %v, %v; want the lease's end %v", next, ok, leaseEnd)
	}

	c.Advance(time.Second)
	if err := s.DeliveryAttempted(db.ID, 200, "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	got := delivery(t, s, w.ID, db.ID)
	if got.Status != store.DeliveryDelivered || got.Attempts != 1 || got.LastStatus != 200 || got.LastError != "" ||
		got.Claimed || !got.NextAttempt.IsZero() || !got.DeliveredAt.Equal(c.Now()) {
		t.Fatalf("delivered = %+v", got)
	}

	// The sender of a's delivery died: when its lease ends, it is due again.
	c.t = leaseEnd
	again, _ := mustClaimDelivery(t, s, lease)
	if again.ID != da.ID || again.Attempts != 0 || !again.NextAttempt.Equal(leaseEnd.Add(lease)) {
		t.Fatalf("claim after the lease = %+v; want a's delivery again", again)
	}
	retryAt := c.Now().Add(10 * time.Second)
	if err := s.DeliveryAttempted(da.ID, 503, "the endpoint answered 503", retryAt); err != nil {
		t.Fatal(err)
	}
	got = delivery(t, s, w.ID, da.ID)
	if got.Status != store.DeliveryPending || got.Attempts != 1 || got.LastStatus != 503 || got.LastError != "the endpoint answered 503" ||
		got.Claimed || !got.NextAttempt.Equal(retryAt) || !got.DeliveredAt.IsZero() {
		t.Fatalf("to be retried = %+v", got)
	}
	noDeliveryDue(t, s)
	if next, ok := s.NextDeliveryDue(); !ok || !next.Equal(retryAt) {
		t.Fatalf("NextDeliveryDue = %v, %v; want the retry at %v", next, ok, retryAt)
	}

	c.t = retryAt
	retried, _ := mustClaimDelivery(t, s, lease)
	if retried.ID != da.ID || retried.Attempts != 1 || retried.LastStatus != 503 {
		t.Fatalf("claim of the retry = %+v", retried)
	}
	if err := s.DeliveryAttempted(da.ID, 0, "the endpoint did not answer (gave up)", time.Time{}); err != nil {
		t.Fatal(err)
	}
	got = delivery(t, s, w.ID, da.ID)
	if got.Status != store.DeliveryFailed || got.Attempts != 2 || got.LastStatus != 0 || got.LastError == "" ||
		got.Claimed || !got.NextAttempt.IsZero() || !got.DeliveredAt.IsZero() {
		t.Fatalf("given up = %+v", got)
	}
	noDeliveryDue(t, s)
	if next, ok := s.NextDeliveryDue(); ok {
		t.Fatalf("NextDeliveryDue = %v with the outbox empty", next)
	}
	if err := s.DeliveryAttempted("dlv_nope", 200, "", time.Time{}); err != nil {
		t.Fatalf("DeliveryAttempted(unknown) = %v; want nil, as for a deleted webhook's", err)
	}
}

func releaseDeliveries(t *testing.T, s Webhooks) {
	c := newClock(s)
	p := mustProject(t, s, "acme")
	w := mustWebhook(t, s, p.ID, "https://hook.example.test", allEvents)
	endJob(t, s, p.ID, "alice", 1, "")
	if n, err := s.ReleaseDeliveries(); n != 0 || err != nil {
		t.Fatalf("ReleaseDeliveries with none claimed = %d, %v", n, err)
	}
	d, _ := mustClaimDelivery(t, s, time.Hour)
	noDeliveryDue(t, s)

	// The process stopped mid-attempt; at the next start its claims go.
	c.Advance(time.Minute)
	if n, err := s.ReleaseDeliveries(); n != 1 || err != nil {
		t.Fatalf("ReleaseDeliveries = %d, %v; want 1", n, err)
	}
	got := delivery(t, s, w.ID, d.ID)
	if got.Claimed || got.Status != store.DeliveryPending || got.Attempts != 0 || !got.NextAttempt.Equal(c.Now()) {
		t.Fatalf("released delivery = %+v; want pending, due now", got)
	}
	if n, err := s.ReleaseDeliveries(); n != 0 || err != nil {
		t.Fatalf("second ReleaseDeliveries = %d, %v; want 0", n, err)
	}
	if again, _ := mustClaimDelivery(t, s, time.Hour); again.ID != d.ID {
		t.Fatalf("claim after release = %+v; want %s", again, d.ID)
	}
}

func deleteWebhookDropsDeliveries(t *testing.T, s Webhooks) {
	c := newClock(s)
	p := mustProject(t, s, "acme")
	gone := mustWebhook(t, s, p.ID, "https://gone.example.test", allEvents)
	c.Advance(time.Second)
	kept := mustWebhook(t, s, p.ID, "https://kept.example.test", allEvents)
	endJob(t, s, p.ID, "alice", 1, "")
	endJob(t, s, p.ID, "alice", 1, "")
	claimed, w := mustClaimDelivery(t, s, time.Minute)
	if w.ID != gone.ID {
		t.Fatalf("first claim went to %s; want the older webhook %s", w.ID, gone.ID)
	}
	if err := s.DeleteWebhook(gone.ID); err != nil {
		t.Fatal(err)
	}
	if ds := mustDeliveries(t, s, gone.ID, 10); len(ds) != 0 {
		t.Fatalf("a deleted webhook's deliveries: %+v", ds)
	}
	// Its sender reports back after the delete: no error, nothing revived.
	if err := s.DeliveryAttempted(claimed.ID, 200, "", time.Time{}); err != nil {
		t.Fatalf("DeliveryAttempted of a deleted webhook's delivery: %v", err)
	}
	c.Advance(time.Hour) // every lease has ended
	for range 2 {
		d, w := mustClaimDelivery(t, s, time.Minute)
		if w.ID != kept.ID {
			t.Fatalf("claimed %+v for webhook %s; want only %s's", d, w.ID, kept.ID)
		}
		if err := s.DeliveryAttempted(d.ID, 204, "", time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	noDeliveryDue(t, s)
	if ds := mustDeliveries(t, s, kept.ID, 10); len(ds) != 2 || ds[0].Status != store.DeliveryDelivered || ds[1].Status != store.DeliveryDelivered {
		t.Fatalf("the kept webhook's deliveries = %+v; want 2 delivered", ds)
	}
}

// Senders on several nodes claim at once: each delivery goes to one.
func concurrentDeliveryClaims(t *testing.T, s Webhooks) {
	newClock(s)
	p := mustProject(t, s, "acme")
	w := mustWebhook(t, s, p.ID, "https://hook.example.test", allEvents)
	const events, senders = 30, 4
	for i := range events {
		endJob(t, s, p.ID, fmt.Sprint("owner", i), i, "")
	}
	seen := claimConcurrently(t, senders, func() (string, error) {
		d, _, err := s.ClaimDelivery(time.Hour, nil, nil)
		if errors.Is(err, store.ErrNoDelivery) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return d.ID, nil
	})
	if len(seen) != events {
		t.Fatalf("%d deliveries claimed, want %d", len(seen), events)
	}
	for _, d := range mustDeliveries(t, s, w.ID, 100) {
		if _, ok := seen[d.ID]; !ok || !d.Claimed {
			t.Fatalf("delivery %+v: want it claimed", d)
		}
	}
}
