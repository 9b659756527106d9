package server_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// maxEcho is the most of one piece of a request an error quotes (clip.Max
// and its "…"), and maxErrorBody the longest error body these requests
// get back.
const (
	maxEcho      = 64
	maxErrorBody = 512
)

// Every error that names a piece of the request quotes a clipped piece of
// it: a request of a megabyte is not answered, nor logged, with a
// megabyte of itself. The filter of the hostile run came back as 872,000
// characters of its keys.
func TestErrorsEchoLittleOfTheRequest(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("x", 100_000)
	manyKeys := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%07d":1`, i)
		}
		return b.String() + "}"
	}
	body, ct := multipartBody(t, part{name: "x" + long, content: []byte("x")})
	cus := e.a.customers[0]
	for _, c := range []struct {
		name                string
		method, path, ctype string
		body                string
		status              int
		want                string
	}{
		{"unknown field", "POST", "/customer/create", "", `{"name": "a", "` + long + `": 1}`, 400, `unknown field "xxx`},
		{"metadata value of another kind", "POST", "/upload/text", "", `{"owner_id": "` + e.a.projectID + `", "text": "t", "metadata": {"` + long[:10_000] + `": 1}}`, 400, "field metadata.xxx"},
		{"number out of range", "POST", "/query/project", "", `{"project_id": "` + e.a.projectID + `", "query": "q", "top_k": 1` + strings.Repeat("0", 400_000) + `}`, 400, "is out of range"},
		{"filter of many keys", "POST", "/query/customer", "", `{"customer_id": "` + cus + `", "query": "q", "filter": ` + manyKeys(70_000) + `}`, 400, "over the limit of"},
		{"filter of a long key", "POST", "/query/customer", "", `{"customer_id": "` + cus + `", "query": "q", "filter": {"metadata.` + long[:500] + `": {"eq": 1}}}`, 400, "must be a string"},
		{"project id", "POST", "/query/project", "", `{"project_id": "` + long + `", "query": "q"}`, 400, "is not a project id"},
		{"someone else's project id", "POST", "/query/project", "", `{"project_id": "prj_` + long + `", "query": "q"}`, 403, "is not the project of this API key"},
		{"customer id", "POST", "/query/customer", "", `{"customer_id": "cus_` + long + `", "query": "q"}`, 404, "not found"},
		{"owner id", "GET", "/documents?owner_id=" + long, "", "", 400, "is neither a project id"},
		{"document id", "GET", "/documents/doc_" + long, "", "", 404, "not found"},
		{"job id", "GET", "/jobs/job_" + long, "", "", 404, "not found"},
		{"webhook id", "DELETE", "/webhooks/wh_" + long, "", "", 404, "not found"},
		{"chunk id", "POST", "/subpage", "", `{"owner_id": "` + e.a.projectID + `", "chunk_id": "chk_` + long + `", "varience": 0}`, 404, "not found"},
		{"service", "POST", "/session/single-tenant", "", `{"project_id": "` + e.a.projectID + `", "services": ["` + long + `"]}`, 400, "unknown service"},
		{"redirect URL", "POST", "/session/single-tenant", "", `{"project_id": "` + e.a.projectID + `", "services": ["all"], "success_url": "` + long[:2000] + `"}`, 400, "absolute http or https URL"},
		{"query string", "GET", "/customers?" + long + ";x", "", "", 400, "separated by &"},
		{"percent-encoding", "GET", "/customers?find=" + long + "%zz", "", "", 400, "not valid percent-encoding"},
		{"query parameter", "GET", "/customers?" + long + "=1", "", "", 400, "unknown query parameter"},
		{"route", "GET", "/" + long, "", "", 404, "no route"},
		{"method", "X" + long, "/customers", "", "", 405, "is not allowed"},
		{"multipart part", "POST", "/upload/file", ct, string(body), 400, "unknown part"},
		{"webhook event", "POST", "/webhooks", "", `{"url": "https://app.example/hooks", "events": ["` + long + `"]}`, 400, "is not an event"},
		{"webhook port", "POST", "/webhooks", "", `{"url": "https://app.example:` + strings.Repeat("9", 2000) + `/hooks"}`, 400, "is not a port"},
	} {
		r := e.do(t, c.method, c.path, e.a.key, c.ctype, bytes.NewReader([]byte(c.body)))
		name := c.name + ": " + r.req[:min(len(r.req), 40)]
		r.req = name
		wantError(t, r, c.status, c.want)
		if len(r.body) > maxErrorBody || strings.Contains(string(r.body), strings.Repeat("x", maxEcho+1)) || strings.Contains(string(r.body), strings.Repeat("0", maxEcho+1)) || strings.Contains(string(r.body), strings.Repeat("9", maxEcho+1)) {
			t.Errorf("%s: an error of %d bytes: %.300s…", name, len(r.body), r.body)
		}
	}
	if len(e.logs.String()) > 100_000 {
		t.Errorf("the server logged %d bytes for these requests", len(e.logs.String()))
	}
}
