package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docsift/docsift/pdf"
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
