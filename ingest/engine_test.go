package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
)

// TestExtractionTimeoutFailsAtOnce checks how a job's error is classified:
// a too-slow extraction is the document's problem (it is as slow on every
// attempt) and fails at once with a message for the uploader, while a
// model-server outage and a full disk are retried.
func TestExtractionTimeoutFailsAtOnce(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now())
	defer cancel()
	_, extractErr := pdf.ExtractAs(expired, pdf.FormatText, []byte("some text"))
	if !errors.Is(extractErr, pdf.ErrTooSlow) {
		t.Fatalf("ExtractAs past its deadline = %v, want ErrTooSlow", extractErr)
	}
	for _, c := range []struct {
		name      string
		err       error
		transient bool
		message   string // describe's result, when not ""
	}{
		{"too slow extraction", extractErr, false, pdf.ErrTooSlow.Error()},
		{"too slow, wrapping the deadline", fmt.Errorf("pdf: extract: %w: %w", pdf.ErrTooSlow, context.DeadlineExceeded), false, pdf.ErrTooSlow.Error()},
		{"model server unreachable", fmt.Errorf("embed: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true, ""},
		{"model server too slow", fmt.Errorf("embed: %w", context.DeadlineExceeded), true, ""},
		{"disk full", fmt.Errorf("store: replace chunks: %w", syscall.ENOSPC), true, ""},
		{"damaged file", fmt.Errorf("pdf: %w", pdf.ErrCorrupt), false, pdf.ErrCorrupt.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := transient(c.err); got != c.transient {
				t.Errorf("transient(%v) = %v, want %v", c.err, got, c.transient)
			}
			if c.message != "" {
				if got := describe(c.err); got != c.message {
					t.Errorf("describe(%v) = %q, want %q", c.err, got, c.message)
				}
			}
		})
	}
}

// emptyDOCX is a valid Word document (the minimal OOXML parts) whose only
// paragraphs are blank.
func emptyDOCX(t *testing.T) []byte {
	t.Helper()
	const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"
	parts := []struct{ name, body string }{
		{"[Content_Types].xml", `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/_rels/document.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>`},
		{"word/document.xml", `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p/><w:p><w:r><w:t xml:space="preserve">  </w:t></w:r></w:p></w:body></w:document>`},
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		w, err := zw.Create(p.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, xmlHeader+p.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDescribeNoTextNamesFormat checks that a job's error for a document
// without text keeps the extractor's own sentence for its format rather
// than the generic one about scanned PDFs.
func TestDescribeNoTextNamesFormat(t *testing.T) {
	_, err := pdf.Extract(context.Background(), emptyDOCX(t))
	if !errors.Is(err, pdf.ErrNoText) {
		t.Fatalf("Extract(empty DOCX) = %v, want ErrNoText", err)
	}
	msg := describe(fmt.Errorf("ingest: extract: %w", err))
	if strings.Contains(msg, "PDF") || strings.Contains(msg, "OCR") || !strings.Contains(msg, "Word document") {
		t.Errorf("describe = %q, want the Word document's own message", msg)
	}
	if strings.Contains(msg, "ingest:") || strings.Contains(msg, "pdf:") {
		t.Errorf("describe = %q keeps package prefixes", msg)
	}
	if got := describe(fmt.Errorf("pdf: extract: %w", pdf.ErrNoText)); got != pdf.ErrNoText.Error() {
		t.Errorf("describe(PDF without text) = %q", got)
	}
}

// failingFinish is a store that cannot record the first few job
// outcomes, as on a full disk.
type failingFinish struct {
	*store.Store
	fails atomic.Int32 // failures left
}

func (f *failingFinish) FinishJob(jobID string, chunks, pages int, errMsg string) error {
	if f.fails.Add(-1) >= 0 {
		return fmt.Errorf("store: finish job: write docsift.db: %w", syscall.ENOSPC)
	}
	return f.Store.FinishJob(jobID, chunks, pages, errMsg)
}

// A job whose outcome the store could not record at first is recorded
// once it can: it does not stay PROCESSING until the next start.
func TestOutcomeRecordedOnceTheStoreCan(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &failingFinish{Store: st}
	f.fails.Store(3)
	e := New(f, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1, RetryBase: 10 * time.Millisecond}, quietLog())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	job, _, err := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "tides.txt", Data: []byte("The tide turns twice a day.")})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, e, job.ID); j.Status != store.StatusSucceeded || f.fails.Load() >= 0 {
		t.Errorf("job %s %q, %d failures left; want it SUCCEEDED after the store's three failures", j.Status, j.Error, f.fails.Load()+1)
	}
}

// failingClaims is a store that cannot claim jobs, as on a full disk; it
// says when it has been asked n times.
type failingClaims struct {
	*store.Store
	calls atomic.Int32
	n     int32
	asked chan struct{}
}

func (f *failingClaims) ClaimJobs(int, func(*store.Document) bool) ([]*store.Job, []*store.Document, error) {
	if f.calls.Add(1) == f.n {
		close(f.asked)
	}
	return nil, nil, fmt.Errorf("store: claim job: write docsift.db: %w", syscall.ENOSPC)
}

// A store that keeps failing to claim is not logged at every try: the
// 1st, 2nd and 4th failures are, not the 3rd or the 5th.
func TestClaimFailuresLoggedLessAndLess(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &failingClaims{Store: st, n: 6, asked: make(chan struct{})}
	var logged lockedLog
	e := New(f, llm.NewBuiltin(), filepath.Join(dir, "index"), Config{Workers: 1}, slog.New(slog.NewTextHandler(&logged, nil)))
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if _, _, err := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "prj_p", Name: "tides.txt", Data: []byte("The tide turns twice a day.")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.asked:
	case <-time.After(30 * time.Second):
		t.Fatalf("the store was asked to claim %d times, want %d", f.calls.Load(), f.n)
	}
	if n := strings.Count(logged.String(), "claiming a job failed"); n != 3 {
		t.Errorf("%d of the first 5 failed claims were logged, want 3 (the 1st, 2nd and 4th):\n%s", n, logged.String())
	}
}

type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
