package cli

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"
)

// A document that takes the server down is never taken up again for ever:
// killed with SIGKILL twice while the same document was being read (as the
// OOM killer would kill it), the server fails that document at the next
// start and goes on with the rest.
func TestDocumentThatKeepsKillingTheServerFails(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	// Pages under the page limit, and a document limit high enough that
	// reading them all takes the worker many seconds: long enough to be
	// caught running.
	flags := []string{"--max-document-text", "1GiB"}
	srv := startProcess(t, bin, dir, addr, flags...)
	key := regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\w+)`).FindStringSubmatch(srv.stdout.String())
	project := regexp.MustCompile(`\((prj_\w+)\)`).FindStringSubmatch(srv.stdout.String())
	if key == nil || project == nil {
		t.Fatalf("first start printed no key or project:\n%s", srv.stdout)
	}
	job := uploadPDFBytes(t, srv.base, key[1], project[1], testpdf.GlyphBomb(400, 800_000))

	for round := 1; round <= 2; round++ {
		waitJob(t, srv, key[1], job, func(j map[string]any) bool { return j["status"] == "PROCESSING" })
		srv.kill9(t)
		srv = startProcess(t, bin, dir, addr, flags...)
	}
	j := waitJob(t, srv, key[1], job, func(j map[string]any) bool { return j["status"] != "PENDING" && j["status"] != "PROCESSING" })
	if j["status"] != "FAILED" || !strings.Contains(j["error"].(string), "stopped the server while it was being processed") {
		t.Fatalf("the document that stopped the server twice: %v", j)
	}
	// The server goes on: a document uploaded now is indexed.
	next := srv.call(t, "POST", "/upload/text", key[1], map[string]any{"owner_id": project[1], "text": "A note about tides and harbours."})
	if j := waitJob(t, srv, key[1], next["job_id"].(string), func(j map[string]any) bool { return j["status"] == "SUCCEEDED" || j["status"] == "FAILED" }); j["status"] != "SUCCEEDED" {
		t.Fatalf("a document after it: %v", j)
	}
}

// uploadPDFBytes uploads data as a PDF file for owner and returns its job id.
func uploadPDFBytes(t *testing.T, base, key, owner string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "upload.pdf")
	fw.Write(data)
	dw, _ := mw.CreateFormField("data")
	json.NewEncoder(dw).Encode(map[string]string{"owner_id": owner})
	mw.Close()
	req, _ := http.NewRequest("POST", base+"/upload/file", &body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d %v", resp.StatusCode, out)
	}
	return out["job_id"].(string)
}

// waitJob polls a job until done holds of it, for up to cliWait.
func waitJob(t *testing.T, p *process, key, job string, done func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(cliWait)
	for {
		j := p.call(t, "GET", "/jobs/"+job, key, nil)
		if done(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never got there: %v", job, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
