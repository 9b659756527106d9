// Package storetest is the conformance suite of docsift's stores: the same
// tests run against the bbolt store (package bolt) and the PostgreSQL one
// (package postgres), so that the two behave alike wherever the server can
// tell. Each suite takes a function that opens a new, empty store.
//
// Times are compared with Equal, not ==: PostgreSQL keeps microseconds.
package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// Projects is the slice of the store covered so far: projects, API keys,
// customers and upload sessions.
type Projects interface {
	store.ProjectStore
	store.CustomerStore
	store.SessionStore
	SetClock(now func() time.Time)
}

// clock is a settable clock: each store's SetClock is given its Now.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time          { return c.t }
func (c *clock) Advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock(s interface{ SetClock(func() time.Time) }) *clock {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s.SetClock(c.Now)
	return c
}
func sameTime(a, b time.Time) bool { return a.Equal(b) }
func sameProject(a, b *store.Project) bool {
	return a.ID == b.ID && a.Name == b.Name && sameTime(a.CreatedAt, b.CreatedAt)
}
func sameCustomer(a, b store.Customer) bool {
	return a.ID == b.ID && a.ProjectID == b.ProjectID && a.Name == b.Name && sameTime(a.CreatedAt, b.CreatedAt)
}

// RunProjects runs every test of the Projects slice, each on a new store.
func RunProjects(t *testing.T, open func(t *testing.T) Projects) {
	t.Run("ProjectsAndFirstKey", func(t *testing.T) { projectsAndFirstKey(t, open(t)) })
	t.Run("KeysCreateListRevoke", func(t *testing.T) { keysCreateListRevoke(t, open(t)) })
	t.Run("UnknownProject", func(t *testing.T) { unknownProject(t, open(t)) })
	t.Run("Customers", func(t *testing.T) { customers(t, open(t)) })
	t.Run("FindCustomers", func(t *testing.T) { findCustomers(t, open(t)) })
	t.Run("SessionsEndWithTheirKey", func(t *testing.T) { sessionsEndWithTheirKey(t, open(t)) })
	t.Run("SessionsClose", func(t *testing.T) { sessionsClose(t, open(t)) })
}

func projectsAndFirstKey(t *testing.T, s Projects) {
	c := newClock(s)
	a, secretA, err := s.CreateProject("acme")
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	b, _, err := s.CreateProject("beta")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.ID, store.PrefixProject) || !a.CreatedAt.Equal(c.Now().Add(-time.Second)) {
		t.Fatalf("created project = %+v", a)
	}
	got, err := s.Project(a.ID)
	if err != nil || !sameProject(got, a) {
		t.Fatalf("Project(%s) = %+v, %v; want %+v", a.ID, got, err, a)
	}
	all, err := s.Projects()
	if err != nil || len(all) != 2 || !sameProject(&all[0], a) || !sameProject(&all[1], b) {
		t.Fatalf("Projects = %+v, %v; want acme then beta", all, err)
	}
	if !strings.HasPrefix(secretA, store.PrefixAPIKey) {
		t.Fatalf("secret %q lacks the prefix %s", secretA, store.PrefixAPIKey)
	}
	p, keyID, err := s.Authenticate(secretA)
	if err != nil || !sameProject(p, a) || !strings.HasPrefix(keyID, store.PrefixKey) {
		t.Fatalf("Authenticate(first key) = %+v, %q, %v", p, keyID, err)
	}
	keys, err := s.Keys(a.ID)
	if err != nil || len(keys) != 1 || keys[0].ID != keyID || keys[0].RevokedAt != nil {
		t.Fatalf("Keys = %+v, %v; want the first key %s", keys, err, keyID)
	}
	if _, err := s.Project("prj_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Project(unknown): err = %v, want ErrNotFound", err)
	}
}

func keysCreateListRevoke(t *testing.T, s Projects) {
	c := newClock(s)
	p, first, err := s.CreateProject("acme")
	if err != nil {
		t.Fatal(err)
	}
	other, otherSecret, err := s.CreateProject("other")
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	second, key, err := s.CreateKey(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The hint is shown in key listings: both stores keep the prefix and 4
	// characters of the secret, no more.
	if key.ProjectID != p.ID || len(second) <= len(store.PrefixAPIKey)+4 || key.Hint != second[:len(store.PrefixAPIKey)+4] {
		t.Fatalf("key %+v for secret %q: want the project and the secret's prefix and 4 characters as hint", key, second)
	}
	keys, err := s.Keys(p.ID)
	if err != nil || len(keys) != 2 || keys[1].ID != key.ID || keys[1].Hint != key.Hint || !keys[1].CreatedAt.Equal(key.CreatedAt) {
		t.Fatalf("Keys = %+v, %v; want the first key then %+v", keys, err, key)
	}
	if got, id, err := s.Authenticate(second); err != nil || got.ID != p.ID || id != key.ID {
		t.Fatalf("Authenticate(second) = %+v, %q, %v", got, id, err)
	}
	if _, _, err := s.Authenticate(second + "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("wrong secret: err = %v, want ErrNotFound", err)
	}

	c.Advance(time.Minute)
	revoked, err := s.RevokeKey(key.ID)
	if err != nil || revoked.ID != key.ID || revoked.RevokedAt == nil || !revoked.RevokedAt.Equal(c.Now()) {
		t.Fatalf("RevokeKey = %+v, %v; want revoked now", revoked, err)
	}
	if _, _, err := s.Authenticate(second); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoked key: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Authenticate(first); err != nil {
		t.Fatalf("the other key stopped working: %v", err)
	}
	if _, _, err := s.Authenticate(otherSecret); err != nil {
		t.Fatalf("another project's key stopped working: %v", err)
	}
	c.Advance(time.Minute)
	again, err := s.RevokeKey(key.ID)
	if err != nil || again.RevokedAt == nil || !again.RevokedAt.Equal(revoked.RevokedAt.UTC()) {
		t.Fatalf("second RevokeKey = %+v, %v; want the first revocation time kept", again, err)
	}
	keys, _ = s.Keys(p.ID)
	if len(keys) != 2 || keys[0].RevokedAt != nil || keys[1].RevokedAt == nil {
		t.Fatalf("Keys after revoke = %+v", keys)
	}
	if keys, _ := s.Keys(other.ID); len(keys) != 1 {
		t.Fatalf("the other project has %d keys, want 1", len(keys))
	}
	if _, err := s.RevokeKey("key_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke unknown: err = %v, want ErrNotFound", err)
	}
}

func unknownProject(t *testing.T, s Projects) {
	if _, _, err := s.CreateKey("prj_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateKey: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Keys("prj_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Keys: err = %v, want ErrNotFound", err)
	}
	if _, err := s.CreateCustomer("prj_nope", "x", store.ProjectLimits{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateCustomer: err = %v, want ErrNotFound", err)
	}
	if cs, next, err := s.Customers("prj_nope", "", "", 10); err != nil || len(cs) != 0 || next != "" {
		t.Fatalf("Customers = %+v, %q, %v; want none", cs, next, err)
	}
	if ps, err := s.Projects(); err != nil || len(ps) != 0 {
		t.Fatalf("Projects = %+v, %v; want none: a refused call wrote something", ps, err)
	}
}

func customers(t *testing.T, s Projects) {
	c := newClock(s)
	p, _, _ := s.CreateProject("acme")
	other, _, _ := s.CreateProject("other")
	a, err := s.CreateCustomer(p.ID, "alice", store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	b, _ := s.CreateCustomer(p.ID, "bob", store.ProjectLimits{})
	if _, err := s.CreateCustomer(other.ID, "carol", store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.ID, store.PrefixCustomer) || a.ProjectID != p.ID {
		t.Fatalf("created customer = %+v", a)
	}
	got, err := s.Customer(b.ID)
	if err != nil || !sameCustomer(*got, *b) {
		t.Fatalf("Customer = %+v, %v; want %+v", got, err, b)
	}
	cs, next, err := s.Customers(p.ID, "", "", 10)
	if err != nil || len(cs) != 2 || !sameCustomer(cs[0], *a) || !sameCustomer(cs[1], *b) || next != "" {
		t.Fatalf("Customers = %+v, %q, %v; want alice then bob", cs, next, err)
	}

	// A page at a time, oldest first, the other project's left out; the
	// last page full, with no cursor after it.
	want := []string{a.ID, b.ID}
	for i := range 4 {
		c.Advance(time.Second)
		cus, err := s.CreateCustomer(p.ID, fmt.Sprint("customer ", i), store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, cus.ID)
		if _, err := s.CreateCustomer(other.ID, fmt.Sprint("other ", i), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	var listed []string
	for after, pages := "", 0; ; pages++ {
		cs, next, err := s.Customers(p.ID, "", after, 2)
		if err != nil || len(cs) != 2 || pages == 3 {
			t.Fatalf("page %d after %q: %d customers, %v", pages, after, len(cs), err)
		}
		for _, cus := range cs {
			listed = append(listed, cus.ID)
		}
		if next == "" {
			break
		}
		if next != cs[1].ID {
			t.Fatalf("next cursor %q, want the page's last customer %q", next, cs[1].ID)
		}
		after = next
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("customers page by page: %v, want %v", listed, want)
	}
	if cs, next, err := s.Customers(p.ID, "", want[len(want)-1], 2); err != nil || len(cs) != 0 || next != "" {
		t.Fatalf("Customers after the last = %+v, %q, %v; want none", cs, next, err)
	}
	if _, _, err := s.Customers(p.ID, "", "", 0); err == nil {
		t.Fatal("Customers with limit 0: no error")
	}
	if _, err := s.Customer("cus_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Customer(unknown): err = %v, want ErrNotFound", err)
	}
}

// findCustomers: a find lists the customers whose name or id holds it,
// case aside, a page at a time as every customer is, and never another
// project's.
func findCustomers(t *testing.T, s Projects) {
	c := newClock(s)
	p, _, _ := s.CreateProject("acme")
	other, _, _ := s.CreateProject("other")
	var ids []string
	for _, name := range []string{"Ålborg Harbour", "north wind", "Harbor Lights", "ålborg south", "HARBOUR master", "quay"} {
		c.Advance(time.Second)
		cus, err := s.CreateCustomer(p.ID, name, store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cus.ID)
		if _, err := s.CreateCustomer(other.ID, name, store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	find := func(text, after string, limit int) ([]string, string) {
		t.Helper()
		cs, next, err := s.Customers(p.ID, text, after, limit)
		if err != nil {
			t.Fatalf("find %q: %v", text, err)
		}
		var got []string
		for _, cus := range cs {
			if cus.ProjectID != p.ID {
				t.Fatalf("find %q lists another project's customer %+v", text, cus)
			}
			got = append(got, cus.ID)
		}
		return got, next
	}
	for _, tc := range []struct {
		find string
		want []string
	}{
		{"harbour", []string{ids[0], ids[4]}},
		{"ÅLBORG", []string{ids[0], ids[3]}},
		{"r li", []string{ids[2]}},
		{strings.ToUpper(ids[5]), []string{ids[5]}},
		{"", ids},
		{"nowhere", nil},
	} {
		if got, next := find(tc.find, "", 10); !slices.Equal(got, tc.want) || next != "" {
			t.Errorf("find %q: %v, next %q; want %v and no next", tc.find, got, next, tc.want)
		}
	}

	// A page at a time: the cursor is the page's last match, and the last
	// page, full, has none.
	if got, next := find("o", "", 2); !slices.Equal(got, ids[:2]) || next != ids[1] {
		t.Fatalf("find o, first page: %v, next %q", got, next)
	}
	if got, next := find("o", ids[1], 2); !slices.Equal(got, []string{ids[2], ids[3]}) || next != ids[3] {
		t.Fatalf("find o, second page: %v, next %q", got, next)
	}
	if got, next := find("o", ids[3], 2); !slices.Equal(got, []string{ids[4]}) || next != "" {
		t.Fatalf("find o, last page: %v, next %q", got, next)
	}
	if got, next := find("harbour", ids[0], 1); !slices.Equal(got, []string{ids[4]}) || next != "" {
		t.Fatalf("find harbour after the first: %v, next %q; want the last match and no next", got, next)
	}
}

func sessionsEndWithTheirKey(t *testing.T, s Projects) {
	c := newClock(s)
	p, _, _ := s.CreateProject("acme")
	_, key, err := s.CreateKey(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	otherSecret, otherKey, _ := s.CreateKey(p.ID)
	in := store.Session{ProjectID: p.ID, OwnerID: "user-1", CustomerID: "cus_x", KeyID: key.ID,
		Services: []string{"drive", "web"}, SuccessURL: "https://example.test/ok", CancelURL: "https://example.test/no"}
	sess, token, err := s.CreateSession(in, time.Hour, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sess.ID, store.PrefixSession) || !sess.ExpiresAt.Equal(c.Now().Add(time.Hour)) || token == "" {
		t.Fatalf("created session = %+v, token %q", sess, token)
	}
	got, err := s.SessionByToken(token)
	if err != nil || got.ID != sess.ID || got.OwnerID != "user-1" || got.CustomerID != "cus_x" || got.KeyID != key.ID ||
		strings.Join(got.Services, ",") != "drive,web" || got.SuccessURL != in.SuccessURL || got.CancelURL != in.CancelURL ||
		!got.CreatedAt.Equal(sess.CreatedAt) || !got.ExpiresAt.Equal(sess.ExpiresAt) {
		t.Fatalf("SessionByToken = %+v, %v; want %+v", got, err, sess)
	}
	if got.Expired(c.Now()) || !got.Expired(c.Now().Add(time.Hour)) {
		t.Fatalf("session %+v: want open now and expired after its ttl", got)
	}
	in.KeyID = otherKey.ID
	kept, keptToken, _ := s.CreateSession(in, time.Hour, store.ProjectLimits{})
	bare, bareToken, err := s.CreateSession(store.Session{ProjectID: p.ID, OwnerID: "user-2"}, time.Hour, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.SessionByToken(bareToken); err != nil || got.ID != bare.ID || len(got.Services) != 0 || got.KeyID != "" {
		t.Fatalf("session without services or key = %+v, %v", got, err)
	}
	if _, err := s.SessionByToken(token + "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown token: err = %v, want ErrNotFound", err)
	}

	c.Advance(time.Minute)
	if _, err := s.RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	ended, err := s.SessionByToken(token)
	if err != nil || !ended.Expired(c.Now()) || !ended.ExpiresAt.Equal(c.Now()) || ended.Closed != store.SessionRevoked {
		t.Fatalf("session of the revoked key = %+v, %v; want closed as revoked at the revocation", ended, err)
	}
	if got, _ := s.SessionByToken(keptToken); got == nil || got.ID != kept.ID || got.Expired(c.Now()) {
		t.Fatalf("another key's session = %+v; want it still open", got)
	}
	// A request let in before the revocation asks for its session after.
	if _, _, err := s.Authenticate(otherSecret); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeKey(otherKey.ID); err != nil {
		t.Fatal(err)
	}
	in.KeyID = otherKey.ID
	if late, _, err := s.CreateSession(in, time.Hour, store.ProjectLimits{}); !errors.Is(err, store.ErrKeyRevoked) {
		t.Fatalf("session of a key revoked after it authenticated = %+v, %v; want ErrKeyRevoked", late, err)
	}
	in.KeyID = key.ID
	if late, _, err := s.CreateSession(in, time.Hour, store.ProjectLimits{}); !errors.Is(err, store.ErrKeyRevoked) {
		t.Fatalf("session of a revoked key = %+v, %v; want ErrKeyRevoked", late, err)
	}
	in.KeyID = "key_nope"
	if late, _, err := s.CreateSession(in, time.Hour, store.ProjectLimits{}); !errors.Is(err, store.ErrKeyRevoked) {
		t.Fatalf("session of a key that does not exist = %+v, %v; want ErrKeyRevoked", late, err)
	}

	// A session asked for while its key is revoked never outlives it:
	// the key authenticated first, as a request's is, or not.
	for round := range 20 {
		secret, k, err := s.CreateKey(p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if round%2 == 0 {
			if _, _, err := s.Authenticate(secret); err != nil {
				t.Fatal(err)
			}
		}
		in.KeyID = k.ID
		var tok string
		var createErr, revokeErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, tok, createErr = s.CreateSession(in, time.Hour, store.ProjectLimits{}) }()
		go func() { defer wg.Done(); _, revokeErr = s.RevokeKey(k.ID) }()
		wg.Wait()
		if revokeErr != nil || createErr != nil && !errors.Is(createErr, store.ErrKeyRevoked) {
			t.Fatalf("round %d: revoke %v, create %v", round, revokeErr, createErr)
		}
		if createErr == nil {
			if got, err := s.SessionByToken(tok); err != nil || !got.Expired(c.Now()) {
				t.Fatalf("round %d: session %+v (%v) of a revoked key still open", round, got, err)
			}
		}
	}
}

// sessionsClose: a session closed by its end user ends then and says how;
// closing it again, or one already expired, changes nothing.
func sessionsClose(t *testing.T, s Projects) {
	c := newClock(s)
	p, _, _ := s.CreateProject("acme")
	in := store.Session{ProjectID: p.ID, OwnerID: p.ID, SuccessURL: "https://example.test/ok", CancelURL: "https://example.test/no"}
	_, token, err := s.CreateSession(in, time.Hour, store.ProjectLimits{})
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := s.CreateSession(in, time.Hour, store.ProjectLimits{})
	c.Advance(time.Minute)
	closed, err := s.CloseSession(token, store.SessionDone)
	if err != nil || closed.Closed != store.SessionDone || !closed.ExpiresAt.Equal(c.Now()) || !closed.Expired(c.Now()) {
		t.Fatalf("CloseSession = %+v, %v; want closed as done, expired now", closed, err)
	}
	if got, err := s.SessionByToken(token); err != nil || got.Closed != store.SessionDone || !got.ExpiresAt.Equal(c.Now()) {
		t.Fatalf("SessionByToken after closing = %+v, %v", got, err)
	}
	if got, _ := s.SessionByToken(other); got == nil || got.Closed != "" || got.Expired(c.Now()) {
		t.Fatalf("another session = %+v; want it open", got)
	}
	c.Advance(time.Minute)
	if again, err := s.CloseSession(token, store.SessionCancelled); err != nil || again.Closed != store.SessionDone || !again.ExpiresAt.Equal(c.Now().Add(-time.Minute)) {
		t.Fatalf("closing again = %+v, %v; want the first close kept", again, err)
	}
	c.Advance(2 * time.Hour)
	if late, err := s.CloseSession(other, store.SessionCancelled); err != nil || late.Closed != "" || !late.ExpiresAt.Equal(c.Now().Add(-time.Hour-2*time.Minute)) {
		t.Fatalf("closing an expired session = %+v, %v; want it left expired, not closed", late, err)
	}
	if _, err := s.CloseSession(token+"x", store.SessionDone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("closing an unknown token: %v, want ErrNotFound", err)
	}
}

// claimConcurrently runs claim from n goroutines at once, each until claim
// returns "" (nothing left), and returns which goroutine took each id. It
// fails the test on an error, or when two goroutines took one id.
func claimConcurrently(t *testing.T, n int, claim func() (string, error)) map[string]int {
	t.Helper()
	claimed := make([][]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id, err := claim()
				if err != nil || id == "" {
					errs[i] = err
					return
				}
				claimed[i] = append(claimed[i], id)
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claimer %d: %v", i, errs[i])
		}
		for _, id := range claimed[i] {
			if j, ok := seen[id]; ok {
				t.Fatalf("%s claimed by claimers %d and %d", id, j, i)
			}
			seen[id] = i
		}
	}
	return seen
}
