//go:build unix

package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
)

// TestJobProgressWhileRunning holds a scan's job on its second page and
// reads GET /jobs/{id} meanwhile: the job is PROCESSING with one page of
// three done. Tesseract is a stand-in, first on PATH, that answers each
// page with the line the test writes to a FIFO; the test waits for the
// engine's signal that progress was written (which the engine does at
// most every few seconds), so no sleep orders the steps. The FIFO is in
// TESSDATA_PREFIX: the extraction sandbox lets Tesseract read its data
// there and nothing else of the test's (and write nowhere).
func TestJobProgressWhileRunning(t *testing.T) {
	scan, err := pdf.ScanPages(context.Background(), numberedPDF(3), []int{1, 2, 3}, 72, pdf.FormatPDF)
	if err != nil {
		t.Fatal(err)
	}
	dir, data := t.TempDir(), t.TempDir()
	pages := filepath.Join(data, "pages")
	if err := syscall.Mkfifo(pages, 0o600); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
cat >/dev/null
read line <"$TESSDATA_PREFIX/pages"
echo "$line"
`
	if err := os.WriteFile(filepath.Join(dir, "tesseract"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("TESSDATA_PREFIX", data)
	// answers is the FIFO's one writer, open until the test ends, so
	// that a line the next stand-in is to read waits in it while the one
	// before exits (each reads one line, and a FIFO without a writer
	// or a reader loses what it holds).
	var answers *os.File
	defer func() {
		if answers != nil {
			answers.Close()
		}
	}()
	answer := func(lines ...string) {
		t.Helper()
		if answers == nil {
			f, err := os.OpenFile(pages, os.O_WRONLY, 0) // once the first stand-in reads
			if err != nil {
				t.Fatal(err)
			}
			answers = f
		}
		for _, line := range lines {
			if _, err := answers.WriteString(line + "\n"); err != nil {
				t.Fatal(err)
			}
		}
	}

	e := newEnv(t, withMaxFileBytes(1<<20))
	owner := e.a.projectID
	r := e.uploadFile(t, e.a.key, dataPart(map[string]string{"owner_id": owner}), filePart("scan.pdf", scan))
	up := decodeAs[apiUpload](t, r)
	answer("Invoices are paid within thirty days of delivery.")

	// progressOf returns the job as GET /jobs shows it, progress included.
	type jobWithProgress struct {
		Status   string          `json:"status"`
		Progress *map[string]int `json:"progress"`
	}
	progressOf := func() jobWithProgress {
		return decodeAs[jobWithProgress](t, e.get(t, "/jobs/"+up.JobID, e.a.key))
	}
	timeout := time.After(jobDeadline)
	var j jobWithProgress
	for {
		written := e.engine.Progressed()
		if j = progressOf(); j.Progress != nil && (*j.Progress)["pages_done"] == 1 {
			break
		}
		select {
		case <-written:
		case <-timeout:
			t.Fatalf("no progress of page 1 shown within %v: %+v", jobDeadline, j)
		}
	}
	if j.Status != store.StatusProcessing || (*j.Progress)["pages"] != 3 {
		t.Errorf("while page 2 is read: status %s, progress %v; want PROCESSING, 1 of 3 pages", j.Status, *j.Progress)
	}

	answer("The warehouse in Leipzig ships parcels on Mondays.", "Refunds need the original receipt and the packaging.")
	done := e.waitJob(t, e.a.key, up.JobID)
	if done.Status != store.StatusSucceeded {
		t.Fatalf("job ended %s: %s", done.Status, done.Error)
	}
	raw := e.get(t, "/jobs/"+up.JobID, e.a.key)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw.body, &fields); err != nil {
		t.Fatal(err)
	}
	if p, ok := fields["progress"]; ok {
		t.Errorf("a finished job still shows progress %s", p)
	}
	q := e.query(t, e.a.key, "/query/project", map[string]any{"project_id": owner, "query": "warehouse in Leipzig", "top_k": 3})
	if hit := chunkOnPage(q, 2, "warehouse in leipzig"); hit == nil {
		t.Errorf("page 2's OCR text is not found on page 2: %+v", q.Chunks)
	}
}
