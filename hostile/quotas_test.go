//go:build hostile

package hostile

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"
)

// Small quotas, so that reaching them is quick.
const (
	quotaCustomers   = 3
	quotaDocuments   = 5
	quotaSessions    = 2
	quotaStoredBytes = 256 << 10
)

// clearQuota is what a refusal for a quota says: the quota, or the flag
// that sets it.
var clearQuota = regexp.MustCompile(`quota|--max-[a-z-]+-per-project`)

// Finding 11: no quotas on customers, documents, stored bytes or
// sessions. A project over each of its quotas is refused with 403 (429
// for sessions, which expire) and an error that says so, and the other
// tenant is served meanwhile; what was taken before is kept.
func TestQuotas(t *testing.T) {
	s := newServer(t, "quotas", []string{
		"--max-customers-per-project", fmt.Sprint(quotaCustomers),
		"--max-documents-per-project", fmt.Sprint(quotaDocuments),
		"--max-sessions-per-project", fmt.Sprint(quotaSessions),
		"--max-stored-bytes-per-project", fmt.Sprint(quotaStoredBytes),
	})
	defer s.kill9(t)
	b := newTenant(t, s, "tenant-b", false)

	// overQuota makes calls until one is refused, and checks it is the
	// quota's refusal after exactly n taken.
	overQuota := func(what string, n, status int, call func(i int) reply) {
		t.Helper()
		for i := 0; i <= n; i++ {
			r := call(i)
			switch {
			case i < n && r.status != http.StatusOK:
				t.Errorf("%s %d of a quota of %d: %d %s", what, i+1, n, r.status, truncated(r.body, 300))
				return
			case i == n && r.status == http.StatusOK:
				t.Errorf("%s %d was taken over a quota of %d", what, i+1, n)
				return
			case i == n && (r.status != status || !clearQuota.MatchString(r.str("error")) || len(r.body) > maxErrorBytes):
				t.Errorf("%s over a quota of %d: %d %s; want %d saying what the quota is", what, n, r.status, truncated(r.body, 300), status)
				return
			case i == n:
				figure(t, "%s over a quota of %d: %d %s", what, n, r.status, r.str("error"))
			}
		}
	}

	project, key := s.newProject(t, "customers")
	overQuota("customer", quotaCustomers, http.StatusForbidden, func(i int) reply {
		return s.do(t, "POST", "/customer/create", key, map[string]any{"project_id": project, "name": fmt.Sprintf("c%d", i)})
	})
	project, key = s.newProject(t, "documents")
	overQuota("document", quotaDocuments, http.StatusForbidden, func(i int) reply {
		return s.uploadText(t, key, project, fmt.Sprintf("Document %d of a project with a quota of documents.", i))
	})
	project, key = s.newProject(t, "sessions")
	overQuota("session", quotaSessions, http.StatusTooManyRequests, func(int) reply {
		return s.do(t, "POST", "/session/single-tenant", key, map[string]any{
			"project_id": project, "services": []string{"all"},
			"success_url": "https://example.com/done", "cancel_url": "https://example.com/cancel",
		})
	})
	project, key = s.newProject(t, "bytes")
	overQuota("upload of 100 KiB", quotaStoredBytes/(100<<10), http.StatusForbidden, func(i int) reply {
		return s.uploadFile(t, key, project, fmt.Sprintf("f%d.pdf", i), paddedPDF(fmt.Sprintf("Stored bytes file %d.", i), 99<<10))
	})
	b.works(t, s, "after the quotas")
	s.checkAcknowledged(t)
}
