package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"testing"
)

// TestGroupedIngestSurvivesKill9 uploads many small documents at once, so
// that their uploads, claims, chunks and outcomes are committed in groups,
// and kills the server with SIGKILL while they are in full flight: every
// upload it acknowledged is still there after the restart and gets indexed,
// and every job it reported SUCCEEDED is still SUCCEEDED, its document
// found by its words.
func TestGroupedIngestSurvivesKill9(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	srv := startProcess(t, bin, dir, addr, "--workers", "2")
	key := regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\w+)`).FindStringSubmatch(srv.stdout.String())
	project := regexp.MustCompile(`\((prj_\w+)\)`).FindStringSubmatch(srv.stdout.String())
	if key == nil || project == nil {
		t.Fatalf("first start printed no key or project:\n%s", srv.stdout)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	send := func(method, path string, body any, out any) (int, error) {
		var b []byte
		if body != nil {
			b, _ = json.Marshal(body)
		}
		req, _ := http.NewRequest(method, srv.base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key[1])
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
	}

	// Uploaders send documents, each with a word of its own, and poll
	// their jobs; the test kills the server once enough have succeeded
	// while others are acknowledged and not yet seen to succeed (queued,
	// running, or done since). Successes seen after that are not counted,
	// so some acknowledged jobs are always left to the restart, however
	// long the kill takes to land.
	const uploaders, perUploader, killAfter = 16, 40, 150
	var (
		mu        sync.Mutex
		uploaded  = map[string]string{} // job id → its document's word, for every upload acknowledged
		succeeded = map[string]bool{}   // job ids reported SUCCEEDED before the kill was decided
		killing   bool
	)
	killNow := make(chan struct{})
	var wg sync.WaitGroup
	for u := range uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perUploader {
				word := fmt.Sprintf("zq%dx%dw", u, i)
				var up struct {
					JobID string `json:"job_id"`
				}
				status, err := send("POST", "/upload/text", map[string]any{"owner_id": project[1], "text": "A note about " + word + " and the harbour."}, &up)
				if err != nil || status != http.StatusOK {
					return // killed: the upload was not acknowledged
				}
				mu.Lock()
				uploaded[up.JobID] = word
				mu.Unlock()
				for { // the job's end, or the kill
					var job struct {
						Status string `json:"status"`
					}
					if status, err := send("GET", "/jobs/"+up.JobID, nil, &job); err != nil || status != http.StatusOK {
						return
					}
					if job.Status == "SUCCEEDED" {
						mu.Lock()
						if !killing {
							succeeded[up.JobID] = true
							if len(succeeded) >= killAfter && len(uploaded) > len(succeeded) {
								killing = true
								close(killNow)
							}
						}
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	<-killNow
	srv.kill9(t)
	wg.Wait()

	again := startProcess(t, bin, dir, addr, "--workers", "2")
	for id, word := range uploaded {
		before := succeeded[id]
		job := again.call(t, "GET", "/jobs/"+id, key[1], nil)
		if before && job["status"] != "SUCCEEDED" {
			t.Errorf("job %s reported SUCCEEDED before the kill is %v after it", id, job["status"])
		}
		for job["status"] != "SUCCEEDED" { // requeued at start: it runs again
			if job["status"] == "FAILED" {
				t.Fatalf("job %s acknowledged before the kill failed after it: %v", id, job["error"])
			}
			job = again.call(t, "GET", "/jobs/"+id, key[1], nil)
		}
		q := again.call(t, "POST", "/query/project", key[1], map[string]any{"project_id": project[1], "query": word, "top_k": 1})
		chunks, _ := q["chunks"].([]any)
		if len(chunks) != 1 || !bytes.Contains([]byte(chunks[0].(map[string]any)["text"].(string)), []byte(word)) {
			t.Errorf("document of job %s (succeeded before the kill: %v) not found by its word %s: %v", id, before, word, chunks)
		}
	}
	t.Logf("%d uploads acknowledged, %d reported SUCCEEDED before the kill", len(uploaded), len(succeeded))
}
