package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// Quotas is the slice of what a project keeps against its quotas:
// customers, documents and their bytes, counted as they are created and
// deleted, and sessions alive, with the sweep of those ended.
type Quotas interface {
	Projects
	Chunks
	store.QuotaStore
}

// RunQuotas runs every test of the Quotas slice, each on a new store.
func RunQuotas(t *testing.T, open func(t *testing.T) Quotas) {
	t.Run("UsageFollowsCreatesAndDeletes", func(t *testing.T) { usageFollowsCreatesAndDeletes(t, open(t)) })
	t.Run("QuotasRefuseAndChangeNothing", func(t *testing.T) { quotasRefuseAndChangeNothing(t, open(t)) })
	t.Run("SessionQuotaFreedByTime", func(t *testing.T) { sessionQuotaFreedByTime(t, open(t)) })
	t.Run("ConcurrentCreatesAtTheEdge", func(t *testing.T) { concurrentCreatesAtTheEdge(t, open(t)) })
	t.Run("EndedSessionsSwept", func(t *testing.T) { endedSessionsSwept(t, open(t)) })
}

func mustUsage(t *testing.T, s Quotas, projectID string) store.ProjectUsage {
	t.Helper()
	u, err := s.ProjectUsage(projectID)
	if err != nil {
		t.Fatalf("ProjectUsage(%s): %v", projectID, err)
	}
	return u
}

func wantUsage(t *testing.T, s Quotas, projectID string, customers, documents int, bytes int64, sessions int) {
	t.Helper()
	u := mustUsage(t, s, projectID)
	if u.Customers != customers || u.Documents != documents || u.StoredBytes != bytes || u.Sessions != sessions {
		t.Fatalf("usage of %s = %+v; want %d customers, %d documents, %d bytes, %d sessions",
			projectID, u, customers, documents, bytes, sessions)
	}
}

// createDoc creates a document of owner in project with content, within
// limits.
func createDoc(s Quotas, project, owner, content string, limits store.ProjectLimits) (*store.Document, error) {
	d := &store.Document{ProjectID: project, OwnerID: owner, Name: "doc.txt", Format: "text"}
	_, err := s.CreateDocument(d, store.Bytes([]byte(content)), limits)
	return d, err
}

// Customers, documents of the project and of its customers, and their
// sizes are counted as they come and go; a document's size counts in full
// even when its content is another document's, and its delete gives it
// back whether or not the content stays for the other.
func usageFollowsCreatesAndDeletes(t *testing.T, s Quotas) {
	newClock(s)
	p, _, _ := s.CreateProject("acme")
	other, _, _ := s.CreateProject("other")
	wantUsage(t, s, p.ID, 0, 0, 0, 0)
	cus, err := s.CreateCustomer(p.ID, "alice", store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCustomer(other.ID, "bob", store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	// Larger than what the bbolt store keeps in its records, so that
	// two of them share one file there.
	big := strings.Repeat("the heliotrope valve ", 5000)
	own, err := createDoc(s, p.ID, p.ID, "the project's own", store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := createDoc(s, p.ID, cus.ID, big, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := createDoc(s, p.ID, cus.ID, big, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := createDoc(s, other.ID, other.ID, "another project's", store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	size := int64(len("the project's own")) + 2*int64(len(big))
	wantUsage(t, s, p.ID, 1, 3, size, 0)
	wantUsage(t, s, other.ID, 1, 1, int64(len("another project's")), 0)

	if _, err := s.DeleteDocument(first.ID); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, p.ID, 1, 2, size-int64(len(big)), 0)
	if data, err := s.ReadOriginal(second); err != nil || string(data) != big {
		t.Fatalf("the other document of the same content lost its original: %d bytes, %v", len(data), err)
	}
	if _, err := s.DeleteDocument(own.ID); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, p.ID, 1, 1, int64(len(big)), 0)

	// A replacement by external id counts until the document it
	// replaces goes, as its commit takes the id over.
	v1 := &store.Document{ProjectID: p.ID, OwnerID: cus.ID, Name: "m", Format: "text", ExternalID: "manual"}
	if _, err := s.CreateDocument(v1, store.Bytes([]byte("version one")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := succeed(s, v1); err != nil {
		t.Fatal(err)
	}
	v2 := &store.Document{ProjectID: p.ID, OwnerID: cus.ID, Name: "m", Format: "text", ExternalID: "manual"}
	if _, err := s.CreateDocument(v2, store.Bytes([]byte("version two!")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, p.ID, 1, 3, int64(len(big)+len("version one")+len("version two!")), 0)
	if _, err := succeed(s, v2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Document(v1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the replaced document is still there: %v", err)
	}
	wantUsage(t, s, p.ID, 1, 2, int64(len(big)+len("version two!")), 0)
	wantUsage(t, s, "prj_none", 0, 0, 0, 0)
}

// A create over a quota is refused with the quota's error and changes
// nothing: not the records, not the counters. Each quota is the
// project's alone, and deleting makes room again.
func quotasRefuseAndChangeNothing(t *testing.T, s Quotas) {
	newClock(s)
	p, _, _ := s.CreateProject("acme")
	other, _, _ := s.CreateProject("other")

	limits := store.ProjectLimits{Customers: 2}
	for i := range 2 {
		if _, err := s.CreateCustomer(p.ID, fmt.Sprint("customer ", i), limits); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := s.CreateCustomer(p.ID, "one too many", limits); !errors.Is(err, store.ErrCustomerQuota) {
		t.Fatalf("a customer over the quota = %+v, %v; want ErrCustomerQuota", c, err)
	}
	if cs, _, err := s.Customers(p.ID, "", "", 10); err != nil || len(cs) != 2 {
		t.Fatalf("customers after a refusal: %d, %v; want 2", len(cs), err)
	}
	if _, err := s.CreateCustomer(other.ID, "another project's", limits); err != nil {
		t.Fatalf("another project's customer: %v", err)
	}
	wantUsage(t, s, p.ID, 2, 0, 0, 0)
	// The check asked before a create says what the create would find.
	for _, c := range []struct {
		limits store.ProjectLimits
		more   store.ProjectUsage
		want   error
	}{
		{limits, store.ProjectUsage{Customers: 1}, store.ErrCustomerQuota},
		{store.ProjectLimits{Customers: 3}, store.ProjectUsage{Customers: 1}, nil},
		{limits, store.ProjectUsage{Documents: 1, StoredBytes: 1}, nil},
		{store.ProjectLimits{}, store.ProjectUsage{Customers: 1}, nil},
		{store.ProjectLimits{Documents: 1}, store.ProjectUsage{Documents: 1, StoredBytes: 1}, nil},
		{store.ProjectLimits{StoredBytes: 10}, store.ProjectUsage{Documents: 1, StoredBytes: 11}, store.ErrStorageQuota},
	} {
		if err := s.CheckQuotas(p.ID, c.limits, c.more); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("CheckQuotas(%+v, %+v) = %v, want %v", c.limits, c.more, err, c.want)
		}
	}

	limits = store.ProjectLimits{Documents: 3, StoredBytes: 100}
	var docs []*store.Document
	for _, content := range []string{"forty bytes of text, give or take a few", "thirty bytes, or thereabouts."} {
		d, err := createDoc(s, p.ID, p.ID, content, limits)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	var used int64
	for _, d := range docs {
		used += d.Size
	}
	pending, _, _ := s.PendingJobs()
	tooBig := strings.Repeat("x", int(100-used)+1)
	if d, err := createDoc(s, p.ID, p.ID, tooBig, limits); !errors.Is(err, store.ErrStorageQuota) {
		t.Fatalf("a document past the storage quota = %+v, %v; want ErrStorageQuota", d, err)
	}
	if n, _, _ := s.PendingJobs(); n != pending {
		t.Fatalf("a refused document queued a job: %d pending, want %d", n, pending)
	}
	if list, _, err := s.Documents(p.ID, "", 10); err != nil || len(list) != 2 {
		t.Fatalf("documents after a refusal: %d, %v; want 2", len(list), err)
	}
	wantUsage(t, s, p.ID, 2, 2, used, 0)
	// Up to the quota, not over: fits.
	last, err := createDoc(s, p.ID, p.ID, tooBig[1:], limits)
	if err != nil {
		t.Fatalf("a document that takes the storage quota exactly: %v", err)
	}
	wantUsage(t, s, p.ID, 2, 3, 100, 0)
	if d, err := createDoc(s, p.ID, "cus_any", "x", store.ProjectLimits{Documents: 3}); !errors.Is(err, store.ErrDocumentQuota) {
		t.Fatalf("a customer's document over the documents quota = %+v, %v; want ErrDocumentQuota", d, err)
	}
	if _, err := createDoc(s, other.ID, other.ID, tooBig, limits); err != nil {
		t.Fatalf("another project's document: %v", err)
	}
	// A delete gives its room back.
	if _, err := s.DeleteDocument(last.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := createDoc(s, p.ID, "cus_any", "y", limits); err != nil {
		t.Fatalf("a document once another was deleted: %v", err)
	}
	// A quota of one kind does not stop the others.
	if _, err := s.CreateCustomer(p.ID, "third", store.ProjectLimits{Documents: 1, StoredBytes: 1}); err != nil {
		t.Fatalf("a customer of a project at its documents quota: %v", err)
	}

	sessLimits := store.ProjectLimits{Sessions: 2}
	in := store.Session{ProjectID: p.ID, OwnerID: p.ID}
	_, first, err := s.CreateSession(in, time.Hour, sessLimits)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateSession(in, time.Hour, sessLimits); err != nil {
		t.Fatal(err)
	}
	if sess, _, err := s.CreateSession(in, time.Hour, sessLimits); !errors.Is(err, store.ErrSessionQuota) {
		t.Fatalf("a session over the quota = %+v, %v; want ErrSessionQuota", sess, err)
	}
	if err := s.CheckQuotas(p.ID, sessLimits, store.ProjectUsage{Sessions: 1}); !errors.Is(err, store.ErrSessionQuota) {
		t.Fatalf("CheckQuotas of a session over the quota = %v, want ErrSessionQuota", err)
	}
	if err := s.CheckQuotas(p.ID, store.ProjectLimits{Sessions: 3}, store.ProjectUsage{Sessions: 1}); err != nil {
		t.Fatalf("CheckQuotas of a session within the quota = %v", err)
	}
	wantUsage(t, s, p.ID, 3, 3, used+1, 2)
	// Closed, a session frees its room.
	if _, err := s.CloseSession(first, store.SessionDone); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateSession(in, time.Hour, sessLimits); err != nil {
		t.Fatalf("a session once another was closed: %v", err)
	}
	in.ProjectID = other.ID
	if _, _, err := s.CreateSession(in, time.Hour, sessLimits); err != nil {
		t.Fatalf("another project's session: %v", err)
	}
}

// Sessions alive are those whose time has not run out, or been ended by
// their key's revocation: their room comes back with the time, before any
// sweep, and the usage says when the first one expires.
func sessionQuotaFreedByTime(t *testing.T, s Quotas) {
	c := newClock(s)
	p, _, _ := s.CreateProject("acme")
	_, key, err := s.CreateKey(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	limits := store.ProjectLimits{Sessions: 3}
	in := store.Session{ProjectID: p.ID, OwnerID: p.ID}
	early, _, err := s.CreateSession(in, time.Hour, limits)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if _, _, err := s.CreateSession(in, 2*time.Hour, limits); err != nil {
		t.Fatal(err)
	}
	in.KeyID = key.ID
	if _, _, err := s.CreateSession(in, 3*time.Hour, limits); err != nil {
		t.Fatal(err)
	}
	u := mustUsage(t, s, p.ID)
	if u.Sessions != 3 || !u.NextSessionExpiry.Equal(early.ExpiresAt) {
		t.Fatalf("usage = %+v; want 3 sessions, the first expiring at %s", u, early.ExpiresAt)
	}
	if _, _, err := s.CreateSession(in, time.Hour, limits); !errors.Is(err, store.ErrSessionQuota) {
		t.Fatalf("a fourth session: %v, want ErrSessionQuota", err)
	}
	c.t = early.ExpiresAt // expired at its expiry, as Session.Expired says
	u = mustUsage(t, s, p.ID)
	if u.Sessions != 2 || !u.NextSessionExpiry.Equal(early.ExpiresAt.Add(time.Hour+time.Minute)) {
		t.Fatalf("usage once the first expired = %+v; want 2, the next expiring an hour and a minute later", u)
	}
	if _, _, err := s.CreateSession(in, time.Hour, limits); err != nil {
		t.Fatalf("a session once another expired: %v", err)
	}
	if _, err := s.RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	if u := mustUsage(t, s, p.ID); u.Sessions != 1 {
		t.Fatalf("usage once the key of two was revoked = %+v; want 1 session", u)
	}
	c.Advance(2 * time.Hour)
	if u := mustUsage(t, s, p.ID); u.Sessions != 0 || !u.NextSessionExpiry.IsZero() {
		t.Fatalf("usage once all expired = %+v; want none", u)
	}
}

// Creates at once at the edge of a quota, as on several nodes, get in
// exactly as many as it leaves room for.
func concurrentCreatesAtTheEdge(t *testing.T, s Quotas) {
	newClock(s)
	p, _, _ := s.CreateProject("acme")
	const tries, room = 12, 5
	run := func(what string, create func(i int) error, quota error) {
		t.Helper()
		errs := make([]error, tries)
		var wg sync.WaitGroup
		for i := range tries {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = create(i) }()
		}
		wg.Wait()
		in := 0
		for i, err := range errs {
			switch {
			case err == nil:
				in++
			case !errors.Is(err, quota):
				t.Fatalf("%s %d: %v", what, i, err)
			}
		}
		if in != room {
			t.Fatalf("%d %s at once with room for %d: %d got in", tries, what, room, in)
		}
	}
	run("customers", func(i int) error {
		_, err := s.CreateCustomer(p.ID, fmt.Sprint(i), store.ProjectLimits{Customers: room})
		return err
	}, store.ErrCustomerQuota)
	run("documents", func(i int) error {
		_, err := createDoc(s, p.ID, fmt.Sprint("cus_", i%3), fmt.Sprint("document ", i), store.ProjectLimits{Documents: room})
		return err
	}, store.ErrDocumentQuota)
	run("sessions", func(i int) error {
		_, _, err := s.CreateSession(store.Session{ProjectID: p.ID, OwnerID: p.ID}, time.Hour, store.ProjectLimits{Sessions: room})
		return err
	}, store.ErrSessionQuota)
	u := mustUsage(t, s, p.ID)
	if u.Customers != room || u.Documents != room || u.Sessions != room {
		t.Fatalf("usage = %+v; want %d of each", u, room)
	}
	// Bytes: each document takes a fifth of the quota.
	d := func(i int) error {
		_, err := createDoc(s, p.ID, p.ID, fmt.Sprintf("%-20d", i), store.ProjectLimits{StoredBytes: u.StoredBytes + room*20})
		return err
	}
	run("documents by their bytes", d, store.ErrStorageQuota)
}

// Sessions that ended are removed by the sweep once they have been ended
// for store.EndedSessionKept, whatever ended them; sessions alive stay,
// and so do the documents uploaded through the ones removed.
func endedSessionsSwept(t *testing.T, s Quotas) {
	c := newClock(s)
	p, _, _ := s.CreateProject("acme")
	_, key, _ := s.CreateKey(p.ID)
	in := store.Session{ProjectID: p.ID, OwnerID: p.ID}
	expired, expiredToken, _ := s.CreateSession(in, 10*time.Second, store.ProjectLimits{})
	_, closedToken, _ := s.CreateSession(in, time.Hour, store.ProjectLimits{})
	in.KeyID = key.ID
	_, revokedToken, _ := s.CreateSession(in, time.Hour, store.ProjectLimits{})
	in.KeyID = ""
	_, aliveToken, err := s.CreateSession(in, 5*time.Hour, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	d := &store.Document{ProjectID: p.ID, OwnerID: p.ID, Name: "through a link", Format: "text",
		Metadata: map[string]string{store.SessionMetaKey: expired.ID}}
	if _, err := s.CreateDocument(d, store.Bytes([]byte("uploaded through the link")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	// The first expires, then the next two are ended.
	c.Advance(30 * time.Second)
	ended := c.Now()
	if _, err := s.CloseSession(closedToken, store.SessionCancelled); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepSessions(); n != 0 || err != nil {
		t.Fatalf("SweepSessions of sessions just ended = %d, %v; want 0: they are kept a while", n, err)
	}
	c.t = expired.ExpiresAt.Add(store.EndedSessionKept - time.Second)
	if n, err := s.SweepSessions(); n != 0 || err != nil {
		t.Fatalf("SweepSessions a second before the kept time = %d, %v; want 0", n, err)
	}
	c.t = expired.ExpiresAt.Add(store.EndedSessionKept)
	if n, err := s.SweepSessions(); n != 1 || err != nil {
		t.Fatalf("SweepSessions = %d, %v; want the one expired", n, err)
	}
	if _, err := s.SessionByToken(expiredToken); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the swept session: %v, want ErrNotFound", err)
	}
	for _, tok := range []string{closedToken, revokedToken} {
		if _, err := s.SessionByToken(tok); err != nil {
			t.Fatalf("a session ended within the kept time: %v", err)
		}
	}
	c.t = ended.Add(store.EndedSessionKept)
	if n, err := s.SweepSessions(); n != 2 || err != nil {
		t.Fatalf("SweepSessions = %d, %v; want the closed and the revoked", n, err)
	}
	if got, err := s.SessionByToken(aliveToken); err != nil || got.Expired(c.Now()) {
		t.Fatalf("the session alive = %+v, %v; want it kept", got, err)
	}
	if docs, err := s.SessionDocuments(p.ID, expired.ID); err != nil || len(docs) != 1 || docs[0].ID != d.ID {
		t.Fatalf("the documents of a swept session = %+v, %v; want the one uploaded", docs, err)
	}
	if got, err := s.Document(d.ID); err != nil || got.Metadata[store.SessionMetaKey] != expired.ID {
		t.Fatalf("the document uploaded through a swept session = %+v, %v", got, err)
	}
	if u := mustUsage(t, s, p.ID); u.Sessions != 1 || u.Documents != 1 {
		t.Fatalf("usage after the sweep = %+v; want the session alive and the document", u)
	}
}
