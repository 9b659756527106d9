package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"

	"github.com/chromedp/chromedp"
	"github.com/docsift/docsift/internal/drivetest"
)

// Flow 6: Google Drive import. Open a Drive session's page, sign in (the
// stand-in consents at once), see a refused file marked before import,
// open a folder, search, select two files (a Google Doc exported as PDF
// and a Markdown file), import them, see both processed in the same list
// as uploads, then Cancel: the grant is revoked at Google and the browser
// lands on cancel_url.
func TestBrowserDriveImport(t *testing.T) {
	g := drivetest.New(t, driveClientID, driveClientSecret)
	field := g.AddFile(drivetest.File{Name: "Field work", MimeType: drivetest.FolderType})
	g.AddFile(drivetest.File{Name: "Harbour plan", MimeType: drivetest.DocumentType, Parents: []string{field.ID},
		Exports: map[string][]byte{"application/pdf": testpdf.Pages(reportPages)}})
	g.AddFile(drivetest.File{Name: "tide-notes.md", MimeType: "text/markdown", Parents: []string{field.ID},
		Content: []byte("# Tides\n\nSpring tides reach the second step of the north pier.\n")})
	g.AddFile(drivetest.File{Name: "pier photo.gif", MimeType: "image/gif", Content: []byte("GIF89a not really")})
	g.AddFile(drivetest.File{Name: "survey scan.pdf", MimeType: "application/pdf", Size: 2 << 30})

	e := newUIEnv(t, func(o *uiOptions) { o.drive = g })
	site := newLanding(t)
	s := e.newSession(t, e.customer.ID, []string{"google_drive"}, site.URL+"/done", site.URL+"/cancelled")
	b := newBrowser(t)

	b.do("open the page", chromedp.Navigate(s.URL), chromedp.WaitVisible(chromedp.ID("drive-connect")))
	if label := evaluate[string](b, `document.getElementById('drive-connect').textContent.trim()`); label != "Import from Google Drive" {
		t.Errorf("the Drive button says %q", label)
	}
	if evaluate[bool](b, `!!document.getElementById('dropzone')`) {
		t.Error("a Drive-only page offers uploads from the device")
	}

	b.do("sign in", chromedp.Click(chromedp.ID("drive-connect")))
	b.waitThroughNavigation("back from Google with the picker", `!!document.getElementById('drive-picker') && !document.getElementById('drive-picker').hidden && document.querySelectorAll('#drive-files tr').length === 3`, jobTimeout)
	if loc := evaluate[string](b, `location.href`); loc != s.URL {
		t.Errorf("the page is at %s after signing in, want %s (no ?drive= left)", loc, s.URL)
	}
	if msg := evaluate[string](b, `document.getElementById('drive-message').textContent`); !strings.Contains(msg, "connected") {
		t.Errorf("the page says %q after signing in", msg)
	}

	// Refused before import: a photo (type) and a 2 GB scan (size).
	type itemRow struct {
		Name     string `json:"name"`
		Kind     string `json:"kind"`
		Disabled bool   `json:"disabled"`
		Refused  string `json:"refused"`
	}
	rows := evaluate[[]itemRow](b, `[...document.querySelectorAll('#drive-files tr')].map(tr => ({
		name: tr.querySelector('.item-name, .folder-link').textContent, kind: tr.dataset.kind,
		disabled: !!tr.querySelector('input[type=checkbox]:disabled'),
		refused: (tr.querySelector('.refused') || {}).textContent || ''}))`)
	want := map[string]itemRow{
		"Field work":      {Kind: "folder"},
		"pier photo.gif":  {Kind: "refused", Disabled: true, Refused: "PNG, JPEG and TIFF"},
		"survey scan.pdf": {Kind: "refused", Disabled: true, Refused: "over the limit of 1 MiB"},
	}
	for _, r := range rows {
		w, ok := want[r.Name]
		if !ok || r.Kind != w.Kind || r.Disabled != w.Disabled || !strings.Contains(r.Refused, w.Refused) {
			t.Errorf("row %+v, want %+v", r, w)
		}
	}

	// Search across folders, then back to My Drive and into the folder.
	b.do("search", chromedp.SendKeys(chromedp.ID("drive-search"), "harbour"))
	b.waitFor("search results", `document.querySelectorAll('#drive-files tr').length === 1 && document.querySelector('#drive-files .item-name').textContent === 'Harbour plan'`, 10*time.Second)
	b.do("back to My Drive", chromedp.Click(`#drive-path button.crumb`))
	b.waitFor("root listed", `document.querySelectorAll('#drive-files tr').length === 3`, 10*time.Second)
	b.do("open the folder", chromedp.Click(`#drive-files .folder-link`))
	b.waitFor("folder listed", `document.querySelectorAll('#drive-files tr').length === 2 && document.querySelector('#drive-path .current').textContent === 'Field work'`, 10*time.Second)

	b.do("select both files", chromedp.Click(`#drive-files tr:nth-child(1) input[type=checkbox]`), chromedp.Click(`#drive-files tr:nth-child(2) input[type=checkbox]`))
	if label := evaluate[string](b, `document.getElementById('drive-import').textContent`); label != "Import 2 files" {
		t.Errorf("the import button says %q", label)
	}
	b.do("import", chromedp.Click(chromedp.ID("drive-import")))
	b.waitFor("both listed", `document.querySelectorAll('#file-list li').length === 2`, 5*time.Second)
	b.waitFor("both processed", `[...document.querySelectorAll('#file-list li')].every(li => li.dataset.status === 'SUCCEEDED')`, jobTimeout)
	names := evaluate[[]string](b, `[...document.querySelectorAll('#file-list .file-name')].map(e => e.textContent)`)
	if strings.Join(names, "|") != "Harbour plan|tide-notes.md" {
		t.Errorf("imported files listed as %q", names)
	}
	if sum := evaluate[string](b, `document.getElementById('summary').textContent`); !strings.Contains(sum, "2 of 2 files ready") {
		t.Errorf("summary %q", sum)
	}
	docs, _, err := e.store.Documents(e.customer.ID, "", 1000)
	if err != nil || len(docs) != 2 {
		t.Fatalf("customer documents: %d, %v", len(docs), err)
	}
	for _, d := range docs {
		if d.Metadata["session_id"] != s.SessionID || d.Metadata["source"] != "google_drive" || d.Status != "SUCCEEDED" {
			t.Errorf("document %s: status %s metadata %v", d.Name, d.Status, d.Metadata)
		}
	}

	b.do("cancel", chromedp.Click(chromedp.ID("cancel")))
	site.wantVisit(t, b.ctx, "/cancelled")
	select {
	case rv := <-g.Revocations():
		if !rv.Refresh {
			t.Error("Cancel revoked the access token only, want the whole grant")
		}
	case <-b.ctx.Done():
		t.Fatal("Cancel did not revoke the Drive grant")
	}
	if g.LiveGrants() != 0 {
		t.Error("a grant lives on after Cancel")
	}
	b.noProblems()
}

// waitThroughNavigation polls a JavaScript condition across page loads: a
// poll that the page cuts short by navigating is started again on the new
// page, until the condition holds or the timeout passes.
func (b *browser) waitThroughNavigation(step, expr string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			b.t.Fatalf("%s: %s did not hold within %s", step, expr, timeout)
		}
		_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(left)))
		if err == nil {
			return
		}
		msg := err.Error()
		if !strings.Contains(msg, "navigated or closed") && !strings.Contains(msg, "Execution context was destroyed") &&
			!strings.Contains(msg, "Cannot find context") && !strings.Contains(msg, "Not attached") {
			b.t.Fatalf("%s: waiting for %s: %v", step, expr, err)
		}
	}
}
