package server_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
)

// The browser tests drive the hosted upload page and the console in a real
// Chromium. Locally they skip when no Chromium is installed; in CI (the
// variable CI is set) a missing browser is a failure, so they cannot be
// skipped by accident.

const (
	browserTestTimeout = 60 * time.Second
	// jobTimeout bounds how long a page may take to show a file processed.
	jobTimeout = 30 * time.Second
)

var updateScreenshot = flag.Bool("ui.screenshot", false, "write docs/upload-page.png from TestBrowserSessionUploadAndDone")

// chromiumPath finds the browser, or skips (locally) or fails (in CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium, chromium-browser or google-chrome on PATH, and CI is set: the browser tests must run in CI (apt-get install -y chromium)")
	}
	t.Skip("no chromium, chromium-browser or google-chrome on PATH: skipping the browser test (apt-get install -y chromium to run it)")
	return ""
}

// browser is one headless Chromium with a fresh profile, for one test.
type browser struct {
	t   *testing.T
	ctx context.Context // bounded by browserTestTimeout

	mu       sync.Mutex
	problems []string // console errors, uncaught exceptions, CSP violations
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1024, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(tabCtx, browserTestTimeout)
	b := &browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	// Registered after the cancels, so it runs before them.
	t.Cleanup(func() {
		if t.Failed() {
			b.saveFailure(tabCtx)
		}
	})

	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable the log domain: %v", err)
	}
	return b
}

// record keeps what the page complains about: a CSP violation shows up as
// a console error, an escaped script as an exception.
func (b *browser) record(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeWarning {
			return
		}
		msg = "console." + string(ev.Type) + ":"
		for _, a := range ev.Args {
			msg += " " + string(a.Value) + a.Description
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level != cdplog.EntryLevelError && ev.Entry.Level != cdplog.EntryLevelWarning {
			return
		}
		// Failed requests are the tests' business (an expired link is a
		// 410 on purpose), except for the pages' own assets.
		if ev.Entry.Source == cdplog.EntrySourceNetwork && !strings.Contains(ev.Entry.URL, "/ui/assets/") {
			return
		}
		msg = "log " + string(ev.Entry.Source) + ": " + ev.Entry.Text + " " + ev.Entry.URL
	default:
		return
	}
	b.mu.Lock()
	b.problems = append(b.problems, msg)
	b.mu.Unlock()
}

// noProblems fails the test if the page logged an error or a violation.
func (b *browser) noProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("the page reported: %s", p)
	}
}

// do runs actions and fails the test, naming the step, on an error.
func (b *browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
}

// waitFor polls a JavaScript condition until it is true.
func (b *browser) waitFor(step, expr string, timeout time.Duration) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(timeout))); err != nil {
		b.t.Fatalf("%s: waiting for %s: %v", step, expr, err)
	}
}

func evaluate[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// saveFailure writes a screenshot and the DOM of the page to
// testdata/failures, for a test that failed.
func (b *browser) saveFailure(tabCtx context.Context) {
	ctx, cancel := context.WithTimeout(tabCtx, 10*time.Second)
	defer cancel()
	dir := filepath.Join("testdata", "failures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name())
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		b.t.Logf("no failure screenshot: %v", err)
	} else if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err == nil {
		abs, _ := filepath.Abs(filepath.Join(dir, name+".png"))
		b.t.Logf("screenshot of the failed page: %s", abs)
	}
	if html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); err == nil {
		if err := os.WriteFile(filepath.Join(dir, name+".html"), []byte(html), 0o644); err == nil {
			abs, _ := filepath.Abs(filepath.Join(dir, name+".html"))
			b.t.Logf("DOM of the failed page: %s", abs)
		}
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		b.t.Logf("the page was at %s", loc)
	}
}

// landing is the caller's site a session sends the user back to: it
// records each visit.
type landing struct {
	*httptest.Server
	visits chan *http.Request
}

func newLanding(t *testing.T) *landing {
	l := &landing{visits: make(chan *http.Request, 8)}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		l.visits <- r.Clone(context.Background())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>Back home</title><h1 id=landed>%s</h1>", r.URL.Path)
	}))
	t.Cleanup(l.Close)
	return l
}

// wantVisit waits for the browser to arrive at path on the landing site.
func (l *landing) wantVisit(t *testing.T, ctx context.Context, pathAndQuery string) {
	t.Helper()
	select {
	case r := <-l.visits:
		if got := r.URL.RequestURI(); got != pathAndQuery {
			t.Fatalf("the browser went to %s, want %s", got, pathAndQuery)
		}
		if ref := r.Header.Get("Referer"); ref != "" {
			t.Errorf("the landing site got Referer %q: the session token leaks", ref)
		}
	case <-ctx.Done():
		t.Fatalf("the browser never reached %s: %v", pathAndQuery, ctx.Err())
	}
}

// writeFiles writes files into a temporary directory and returns their paths.
func writeFiles(t *testing.T, files map[string][]byte, order ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, name := range order {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// Flow 1: create a session through the API, open its URL, upload two files
// through the file input, see both succeed, click Done, land on
// success_url.
func TestBrowserSessionUploadAndDone(t *testing.T) {
	e := newUIEnv(t, func(o *uiOptions) { o.maxFileBytes = server.DefaultMaxFileBytes })
	site := newLanding(t)
	s := e.newSession(t, e.customer.ID, []string{"all"}, site.URL+"/uploaded?ref=42", site.URL+"/cancelled")
	b := newBrowser(t)

	resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(s.URL))
	if err != nil {
		t.Fatalf("open the session URL: %v", err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("session page: HTTP %d", resp.Status)
	}
	b.do("page shown", chromedp.WaitVisible(chromedp.ID("dropzone")))
	if h := evaluate[string](b, `document.querySelector('h1').textContent`); h != "Acme Research" {
		t.Errorf("heading %q", h)
	}
	if c := evaluate[string](b, `document.getElementById('customer-name').textContent`); c != "Globex Legal" {
		t.Errorf("customer %q", c)
	}

	files := writeFiles(t, map[string][]byte{
		"Q3 field report.pdf": testpdf.Pages(reportPages),
		"meeting-notes.md":    []byte("# Harbour meeting\n\nThe new tide gauge goes on the north pier in May.\n\nThe ferry timetable changes with the summer schedule.\n"),
	}, "Q3 field report.pdf", "meeting-notes.md")
	b.do("choose two files", chromedp.SetUploadFiles(chromedp.ID("file-input"), files))
	b.waitFor("both files listed", `document.querySelectorAll('#file-list li').length === 2`, 5*time.Second)
	b.waitFor("both files processed", `[...document.querySelectorAll('#file-list li')].every(li => li.dataset.status === 'SUCCEEDED')`, jobTimeout)

	names := evaluate[[]string](b, `[...document.querySelectorAll('#file-list .file-name')].map(e => e.textContent)`)
	if strings.Join(names, "|") != "Q3 field report.pdf|meeting-notes.md" {
		t.Errorf("listed files %q", names)
	}
	badges := evaluate[[]string](b, `[...document.querySelectorAll('#file-list .badge')].map(e => e.textContent)`)
	if strings.Join(badges, "|") != "Succeeded|Succeeded" {
		t.Errorf("status badges %q", badges)
	}
	if s := evaluate[string](b, `document.getElementById('summary').textContent`); !strings.Contains(s, "2 of 2 files ready") {
		t.Errorf("summary %q", s)
	}
	// The files are the customer's and carry the session.
	docs, _, err := e.store.Documents(e.customer.ID, "", 1000)
	if err != nil || len(docs) != 2 {
		t.Fatalf("customer documents: %d, %v", len(docs), err)
	}
	for _, d := range docs {
		if d.Metadata["session_id"] != s.SessionID || d.Status != "SUCCEEDED" {
			t.Errorf("document %s: status %s metadata %v", d.Name, d.Status, d.Metadata)
		}
	}

	if *updateScreenshot {
		saveReadmeScreenshot(t, b)
	}

	b.do("click Done", chromedp.Click(chromedp.ID("done")))
	site.wantVisit(t, b.ctx, "/uploaded?ref=42")
	b.do("landed", chromedp.WaitVisible(chromedp.ID("landed")))
	if loc := evaluate[string](b, `location.href`); loc != site.URL+"/uploaded?ref=42" {
		t.Errorf("the browser is at %s", loc)
	}
	wantClosed(t, s.URL)
	b.noProblems()
}

// wantClosed waits for the page that was left to have closed its session:
// its beacon and the navigation go out together, and may arrive in
// either order.
func wantClosed(t *testing.T, sessionURL string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(sessionURL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusGone && strings.Contains(string(body), "was closed") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session left by the page still answers %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrowserSessionRateLimitedUploadsRetry uploads more files at once than
// the session's rate limit lets through: the page waits out Retry-After and
// every file still gets indexed.
func TestBrowserSessionRateLimitedUploadsRetry(t *testing.T) {
	// One request per second, a burst of 4: the page load and six uploads
	// in a moment are over it, so some uploads are refused with 429 first.
	e := newUIEnv(t, func(o *uiOptions) { o.sessionRate = 1 })
	site := newLanding(t)
	s := e.newSession(t, e.customer.ID, []string{"file_upload"}, site.URL+"/ok", site.URL+"/no")
	b := newBrowser(t)
	b.do("open the session", chromedp.Navigate(s.URL), chromedp.WaitVisible(chromedp.ID("dropzone")))
	files := map[string][]byte{}
	var order []string
	for i := range 6 {
		name := fmt.Sprintf("note-%d.txt", i)
		files[name] = []byte(fmt.Sprintf("Note number %d about the harbour.", i))
		order = append(order, name)
	}
	b.do("choose six files", chromedp.SetUploadFiles(chromedp.ID("file-input"), writeFiles(t, files, order...)))
	b.waitFor("all six processed", `document.querySelectorAll('#file-list li').length === 6 && [...document.querySelectorAll('#file-list li')].every(li => li.dataset.status === 'SUCCEEDED')`, jobTimeout)
	if docs, _, _ := e.store.Documents(e.customer.ID, "", 1000); len(docs) != 6 {
		t.Fatalf("%d documents stored, want 6", len(docs))
	}
}

// saveReadmeScreenshot writes docs/upload-page.png, the README's picture of
// the upload page (go test -run TestBrowserSessionUploadAndDone -ui.screenshot).
func saveReadmeScreenshot(t *testing.T, b *browser) {
	t.Helper()
	b.do("resize for the screenshot", chromedp.EmulateViewport(720, 860))
	b.waitFor("layout settled", `document.readyState === 'complete'`, 5*time.Second)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := filepath.Join("..", "docs", "upload-page.png")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, len(png))
	b.do("restore the viewport", chromedp.ResetViewport())
}

// Flow 2: the keyboard reaches the drop zone, which opens the file chooser
// with Enter and Space; a slow upload shows a progress bar; Cancel goes to
// cancel_url.
func TestBrowserSessionCancel(t *testing.T) {
	e := newUIEnv(t)
	site := newLanding(t)
	s := e.newSession(t, "", []string{"file_upload"}, site.URL+"/uploaded", site.URL+"/cancelled?why=user")
	b := newBrowser(t)

	if _, err := chromedp.Call(b.ctx, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true}); err != nil {
		t.Fatalf("intercept the file chooser: %v", err)
	}
	b.do("open the page", chromedp.Navigate(s.URL), chromedp.WaitVisible(chromedp.ID("dropzone")))
	if evaluate[bool](b, `!!document.getElementById('customer-name')`) {
		t.Error("a single-tenant page shows a customer")
	}
	for _, key := range []string{"\r", " "} {
		choosers := chromedp.Events(b.ctx, page.FileChooserOpened)
		b.do("focus the drop zone", chromedp.Focus(chromedp.ID("dropzone")))
		if !evaluate[bool](b, `document.activeElement.id === 'dropzone'`) {
			t.Fatal("the drop zone cannot take focus")
		}
		b.do(fmt.Sprintf("press %q on the drop zone", key), chromedp.SendKeys(chromedp.ID("dropzone"), key))
		for ev, err := range choosers {
			if err != nil {
				t.Fatalf("key %q on the drop zone did not open the file chooser: %v", key, err)
			}
			if ev.Mode != page.FileChooserOpenedModeSelectMultiple {
				t.Errorf("the file chooser takes one file, want several")
			}
			break
		}
	}

	// A slow upload shows its progress, and Done warns before it leaves
	// the upload behind.
	if _, err := chromedp.Call(b.ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{URLPattern: e.base + "/s/*", DownloadThroughput: -1, UploadThroughput: 64 << 10}},
	}); err != nil {
		t.Fatalf("throttle uploads: %v", err)
	}
	files := writeFiles(t, map[string][]byte{"big-notes.txt": bytes.Repeat([]byte("a line of field notes about the harbour\n"), 10000)}, "big-notes.txt")
	b.do("choose a large file", chromedp.SetUploadFiles(chromedp.ID("file-input"), files))
	b.waitFor("upload progress shown", `(() => {
		const li = document.querySelector('#file-list li[data-status="UPLOADING"]');
		if (!li) return false;
		const bar = li.querySelector('progress');
		return !bar.hidden && bar.value > 0 && bar.value < 100 && /^Uploading \d+%$/.test(li.querySelector('.badge').textContent);
	})()`, 20*time.Second)
	b.do("click Done during the upload", chromedp.Click(chromedp.ID("done")))
	b.waitFor("Done warns", `document.getElementById('summary').textContent.includes('still uploading')`, 5*time.Second)
	if loc := evaluate[string](b, `location.href`); loc != s.URL {
		t.Fatalf("Done left the page during an upload: %s", loc)
	}
	// A file chosen after the warning is warned about again: a second
	// press of Done leaves only the uploads it was told about.
	more := writeFiles(t, map[string][]byte{"more-notes.txt": bytes.Repeat([]byte("a line of notes about the ferry\n"), 10000)}, "more-notes.txt")
	b.do("choose another file", chromedp.SetUploadFiles(chromedp.ID("file-input"), more))
	b.waitFor("the warning gives way to the count", `document.querySelectorAll('#file-list li').length === 2 && !document.getElementById('summary').textContent.includes('still uploading')`, 5*time.Second)
	b.do("click Done again", chromedp.Click(chromedp.ID("done")))
	b.waitFor("Done warns again", `document.getElementById('summary').textContent.includes('still uploading')`, 5*time.Second)

	b.do("press Enter on Cancel", chromedp.Focus(chromedp.ID("cancel")), chromedp.SendKeys(chromedp.ID("cancel"), "\r"))
	site.wantVisit(t, b.ctx, "/cancelled?why=user")
	b.do("landed", chromedp.WaitVisible(chromedp.ID("landed")))
	wantClosed(t, s.URL)
	b.noProblems()
}

// Flow 3: an expired session shows the friendly page with 410, and an
// unknown one with 404.
func TestBrowserSessionExpired(t *testing.T) {
	e := newUIEnv(t)
	s := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	e.advance(61 * time.Minute)
	b := newBrowser(t)

	resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusGone {
		t.Errorf("expired session: HTTP %d, want 410", resp.Status)
	}
	b.do("notice shown", chromedp.WaitVisible(chromedp.ID("notice-title")))
	if h := evaluate[string](b, `document.getElementById('notice-title').textContent`); h != "Upload link expired" {
		t.Errorf("heading %q", h)
	}
	if evaluate[bool](b, `!!document.getElementById('dropzone') || !!document.querySelector('a[href^="https://app.example"]')`) {
		t.Error("the expired page offers uploads or the session's links")
	}
	// The stylesheet applied: the notice is a styled card, not raw HTML.
	if bg := evaluate[string](b, `getComputedStyle(document.querySelector('.card')).backgroundColor`); bg != "rgb(255, 255, 255)" {
		t.Errorf("card background %q: the stylesheet did not load", bg)
	}

	resp, err = chromedp.Run(b.ctx, chromedp.NavigateResponse(e.base+"/s/not-a-token"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusNotFound {
		t.Errorf("unknown session: HTTP %d, want 404", resp.Status)
	}
	b.do("notice shown", chromedp.WaitVisible(chromedp.ID("notice-title")))
	if h := evaluate[string](b, `document.getElementById('notice-title').textContent`); h != "Upload link not found" {
		t.Errorf("heading %q", h)
	}
	b.noProblems()
}

// Flow 4: a file whose name is markup shows as text, and no script runs.
func TestBrowserSessionXSSFileName(t *testing.T) {
	e := newUIEnv(t)
	s := e.newSession(t, e.customer.ID, []string{"all"}, "https://app.example/ok", "https://app.example/no")
	b := newBrowser(t)

	b.do("open the page", chromedp.Navigate(s.URL), chromedp.WaitVisible(chromedp.ID("dropzone")))
	unsupported := `<b id="bold" onmouseover="window.__xss=2">x.bin`
	files := writeFiles(t, map[string][]byte{
		xssName:     []byte("plain words about a harmless file"),
		unsupported: {0, 1, 2, 3, 0xff, 0xfe, 0, 0},
	}, xssName, unsupported)
	b.do("choose the files", chromedp.SetUploadFiles(chromedp.ID("file-input"), files))
	b.waitFor("the markup file processed", `[...document.querySelectorAll('#file-list li')].some(li => li.dataset.status === 'SUCCEEDED')`, jobTimeout)
	b.waitFor("the binary file refused", `[...document.querySelectorAll('#file-list li')].some(li => li.dataset.status === 'FAILED')`, jobTimeout)

	names := evaluate[[]string](b, `[...document.querySelectorAll('#file-list .file-name')].map(e => e.textContent)`)
	if len(names) != 2 || names[0] != xssName || names[1] != unsupported {
		t.Errorf("file names shown as %q, want the literal names", names)
	}
	if n := evaluate[int](b, `document.querySelectorAll('#file-list img, #file-list b, img[src="x"], #bold').length`); n != 0 {
		t.Errorf("%d elements were made from file names", n)
	}
	if evaluate[bool](b, `window.__xss !== undefined`) {
		t.Error("the payload ran")
	}
	if msg := evaluate[string](b, `document.querySelector('#file-list li[data-status="FAILED"] .file-error').textContent`); !strings.Contains(msg, "supported types") {
		t.Errorf("the refused file shows %q, want the server's error", msg)
	}
	// The page's own requests were all it made: no image request for "x".
	if n := evaluate[int](b, `performance.getEntriesByType('resource').filter(r => r.name.endsWith('/x')).length`); n != 0 {
		t.Error("the browser requested the payload's image")
	}
	b.noProblems()
}

// signIn opens e's console in b and pastes e's key.
func signIn(b *browser, e *uiEnv) {
	b.do("open the console", chromedp.Navigate(e.base+"/console"), chromedp.WaitVisible(chromedp.ID("api-key")))
	b.do("paste the key",
		chromedp.SendKeys(chromedp.ID("api-key"), e.key),
		chromedp.Click(chromedp.ID("connect")),
		chromedp.WaitVisible(chromedp.ID("workspace")),
	)
}

// The console's owners are every customer of the project, however many:
// the owner list shows the first 500 (a page of GET /customers), and the
// find box finds any of them by name or id, asking the API when the first
// page does not hold them all, and among them when it does.
func TestBrowserConsoleFindsEveryCustomer(t *testing.T) {
	e := newUIEnv(t)
	ids := []string{e.customer.ID}
	for i := range 1500 {
		c, err := e.store.CreateCustomer(e.project.ID, fmt.Sprint("customer ", i), store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	b := newBrowser(t)
	signIn(b, e)
	listed := func() []string {
		return evaluate[[]string](b, `[...document.querySelectorAll('#owner option:not([disabled])')].map(o => o.value)`)
	}
	count := func() string { return evaluate[string](b, `document.getElementById('customer-count').textContent`) }
	// find types text and waits for the count it should end with, then
	// for the answer to what was typed to be the one shown.
	find := func(text, wantCount string) {
		b.t.Helper()
		evaluate[string](b, `document.getElementById('owner-find').value = ''`)
		b.do("find "+text, chromedp.SendKeys(chromedp.ID("owner-find"), text))
		b.waitFor("find "+text, fmt.Sprintf(`document.getElementById('customer-count').textContent === %q`, wantCount), 5*time.Second)
	}
	if got, want := listed(), append([]string{e.project.ID}, ids[:500]...); !slices.Equal(got, want) {
		t.Errorf("%d owners listed, want the project and the first 500 customers in order", len(got))
	}
	if got := evaluate[string](b, `document.querySelector('#owner option[disabled]').textContent`); got != "More customers: find one by name or id" {
		t.Errorf("the last option says %q", got)
	}
	if got := count(); got != "More than 500 customers" {
		t.Errorf("customer count %q", got)
	}

	// The last customer, past the first page, by its name in other case;
	// chosen, it is the owner the console keeps.
	find("CUSTOMER 1499", "1 customer matches")
	if got := listed(); !slices.Equal(got, []string{e.project.ID, ids[1500]}) {
		t.Errorf("finding customer 1499 lists %q", got)
	}
	b.do("choose it", chromedp.SetValue(chromedp.ID("owner"), ids[1500]))
	evaluate[bool](b, `document.getElementById('owner').dispatchEvent(new Event('change'))`)
	if got := evaluate[string](b, `sessionStorage.getItem('docsift.owner')`); got != ids[1500] {
		t.Errorf("the chosen owner saved is %q", got)
	}

	// Another find keeps the chosen owner listed, and chosen, even where
	// it does not match: customer 7, 70-79 and 700-799.
	find("customer 7", "111 customers match")
	got := listed()
	if len(got) != 2+111 || got[1] != ids[1500] || got[2] != ids[1+7] {
		t.Errorf("finding customer 7 lists %d owners beginning %q", len(got), got[:min(3, len(got))])
	}
	if got := evaluate[string](b, `document.getElementById('owner').value`); got != ids[1500] {
		t.Errorf("the find changed the owner to %q", got)
	}
	find("customer 1", "More than 500 customers match")
	find(ids[1000], "1 customer matches")
	if got := listed(); !slices.Equal(got, []string{e.project.ID, ids[1500], ids[1000]}) {
		t.Errorf("finding by id lists %q", got)
	}

	// Opened again, the console finds the chosen customer by its id, past
	// the first page, and keeps it chosen.
	b.do("open the console again", chromedp.Navigate(e.base+"/console"), chromedp.WaitVisible(chromedp.ID("workspace")))
	b.waitFor("the chosen owner", fmt.Sprintf(`document.getElementById('owner').value === %q`, ids[1500]), 5*time.Second)
	if got := listed(); len(got) != 502 || got[1] != ids[1500] || got[2] != ids[0] {
		t.Errorf("opened again, %d owners listed, beginning %q", len(got), got[:min(3, len(got))])
	}
	b.noProblems()

	// A project whose customers all fit the first page finds among them.
	p, key, err := e.store.CreateProject("few customers")
	if err != nil {
		t.Fatal(err)
	}
	var few []string
	for _, name := range []string{"Harbour Office", "Ferry Line", "harbour master", "Tide Watch", "Quay", "Lock", "Pier", "Dock", "Buoy", "Mooring"} {
		c, err := e.store.CreateCustomer(p.ID, name, store.ProjectLimits{})
		if err != nil {
			t.Fatal(err)
		}
		few = append(few, c.ID)
	}
	e.key = key
	b.do("sign out", chromedp.Click(chromedp.ID("sign-out")))
	signIn(b, e)
	if got := count(); got != "10 customers" {
		t.Errorf("customer count %q", got)
	}
	find("HARBOUR", "2 customers match")
	if got := listed(); !slices.Equal(got, []string{p.ID, few[0], few[2]}) {
		t.Errorf("finding harbour lists %q", got)
	}
	find("nothing", "0 customers match")
	b.noProblems()
}

// The console on a phone's screen: nothing is wider than the screen (the
// documents table scrolls in its box). Signing out leaves nothing of the
// project for the next key to see.
func TestBrowserConsoleOnAPhone(t *testing.T) {
	e := newUIEnv(t)
	for i := range 3 {
		r := e.postJSON(t, "/upload/text", map[string]any{"owner_id": e.project.ID, "name": fmt.Sprintf("a rather long document name, number %d, to widen the table", i), "text": "The harbour master keeps the tide tables."})
		if r.status != http.StatusOK {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
	}
	b := newBrowser(t)
	b.do("a phone's screen", chromedp.EmulateViewport(360, 740))
	signIn(b, e)
	b.waitFor("documents listed", `document.querySelectorAll('#documents tr').length === 3`, 10*time.Second)
	if w := evaluate[int](b, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("the console is %d px wide on a 360 px screen", w)
	}
	// Delete asks to be confirmed, and says so to a screen reader too.
	del := `document.querySelector('#documents tr button.danger')`
	evaluate[bool](b, del+`.click() === undefined`)
	if label := evaluate[string](b, del+`.getAttribute('aria-label')`); evaluate[string](b, del+`.textContent`) != "Confirm delete" || !strings.HasPrefix(label, "Confirm: delete a rather long document name") {
		t.Errorf("a Delete pressed once reads %q, labelled %q", evaluate[string](b, del+`.textContent`), label)
	}
	evaluate[bool](b, del+`.click() === undefined`)
	b.waitFor("the document gone", `document.querySelectorAll('#documents tr').length === 2`, 10*time.Second)
	b.do("ask",
		chromedp.SendKeys(chromedp.ID("query"), "Who keeps the tide tables?"),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.ID("result")),
	)
	b.do("forget the key, and paste it again on the same page",
		chromedp.Click(chromedp.ID("sign-out")),
		chromedp.WaitVisible(chromedp.ID("api-key")),
		chromedp.SendKeys(chromedp.ID("api-key"), e.key),
		chromedp.Click(chromedp.ID("connect")),
		chromedp.WaitVisible(chromedp.ID("workspace")),
	)
	if evaluate[bool](b, `!document.getElementById('result').hidden || document.getElementById('query').value !== '' || document.getElementById('chunks').children.length > 0`) {
		t.Error("the last key's answer is still on the page")
	}
	b.noProblems()
}

// The upload page on a phone's screen: nothing wider than the screen, and
// Cancel and Done shown in the order Tab reaches them.
func TestBrowserUploadPageOnAPhone(t *testing.T) {
	e := newUIEnv(t)
	s := e.newSession(t, e.customer.ID, []string{"file_upload"}, "https://app.example/done", "https://app.example/cancel")
	b := newBrowser(t)
	b.do("open the page on a phone", chromedp.EmulateViewport(360, 740), chromedp.Navigate(e.base+s.path()), chromedp.WaitVisible(chromedp.ID("done")))
	if w := evaluate[int](b, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("the upload page is %d px wide on a 360 px screen", w)
	}
	if !evaluate[bool](b, `document.getElementById('cancel').getBoundingClientRect().top < document.getElementById('done').getBoundingClientRect().top`) {
		t.Error("Done is shown above Cancel, which Tab reaches first")
	}
	b.noProblems()
}

// Flow 5: the console. Paste a key, upload, query, see the answer and the
// chunks, and open a chunk's subpage.
func TestBrowserConsole(t *testing.T) {
	e := newUIEnv(t)
	b := newBrowser(t)

	signIn(b, e)
	if got := evaluate[string](b, `sessionStorage.getItem('docsift.apiKey')`); got != e.key {
		t.Errorf("sessionStorage holds %q", got)
	}
	if evaluate[bool](b, `location.href.includes('dsk_') || document.cookie !== ''`) {
		t.Error("the key is in the URL or a cookie")
	}
	b.waitFor("owners listed", `document.querySelectorAll('#owner option').length === 2`, 5*time.Second)
	if opts := evaluate[[]string](b, `[...document.querySelectorAll('#owner option')].map(o => o.value)`); opts[0] != e.project.ID || opts[1] != e.customer.ID {
		t.Errorf("owners %q", opts)
	}

	files := writeFiles(t, map[string][]byte{
		"field-report.pdf": testpdf.Pages(reportPages),
		"notes.txt":        []byte("Ferry timetables change with the summer schedule. The harbour office opens at eight."),
	}, "field-report.pdf", "notes.txt")
	b.do("upload two files",
		chromedp.SetUploadFiles(chromedp.ID("console-file"), files),
		chromedp.Click(chromedp.ID("upload-button")),
	)
	b.waitFor("documents processed", `document.querySelectorAll('#documents tr').length === 2 &&
		[...document.querySelectorAll('#documents .badge')].every(e => e.dataset.status === 'SUCCEEDED')`, jobTimeout)

	b.do("ask",
		chromedp.SendKeys(chromedp.ID("query"), "Where is the tide gauge installed?"),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.ID("result")),
	)
	b.waitFor("chunks listed", `document.querySelectorAll('#chunks li.chunk').length > 0`, 10*time.Second)
	if a := evaluate[string](b, `document.getElementById('answer').textContent`); strings.TrimSpace(a) == "" {
		t.Error("no answer shown")
	}
	type chunkRow struct {
		Doc    string `json:"doc"`
		Page   string `json:"page"`
		Score  string `json:"score"`
		Button bool   `json:"button"`
	}
	rows := evaluate[[]chunkRow](b, `[...document.querySelectorAll('#chunks li.chunk')].map(li => ({
		doc: li.querySelector('.chunk-doc').textContent, page: li.querySelector('.chunk-page').textContent,
		score: li.querySelector('.chunk-score').textContent, button: !!li.querySelector('button.subpage')}))`)
	if rows[0].Doc != "field-report.pdf" || rows[0].Page != "page 2" || !rows[0].Button || !strings.HasPrefix(rows[0].Score, "score ") {
		t.Errorf("first chunk %+v: want field-report.pdf, page 2, a score and a subpage button", rows[0])
	}
	for _, r := range rows {
		if r.Button != (r.Page != "no page") {
			t.Errorf("chunk %+v: the subpage button must show exactly for chunks with a page", r)
		}
	}

	consoleOpensSubpage(t, b)

	// With the server gone, a question says so in words where it is
	// seen, and the last answer does not stay under it as if it were
	// this question's.
	// The subpage's tab is in front, and a page behind others polls no
	// animation frames.
	if _, err := chromedp.Call(b.ctx, page.BringToFront, cdp.Empty{}); err != nil {
		t.Fatalf("bring the console to the front: %v", err)
	}
	e.server.Listener.Close()
	e.server.CloseClientConnections()
	b.do("ask with the server gone",
		chromedp.SetValue(chromedp.ID("query"), "When does the harbour office open?"),
		chromedp.Click(chromedp.ID("ask")),
	)
	b.waitFor("the error shown", `!document.getElementById('console-error').hidden`, 10*time.Second)
	if msg := evaluate[string](b, `document.getElementById('console-error').textContent`); !strings.Contains(msg, "The server could not be reached") {
		t.Errorf("with the server gone the console says %q", msg)
	}
	if !evaluate[bool](b, `document.getElementById('result').hidden`) {
		t.Error("the last answer is still shown under a question that failed")
	}
	if !evaluate[bool](b, `(() => { const r = document.getElementById('console-error').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()`) {
		t.Error("the error is out of view")
	}
	b.noProblems()
}

// The console lists an owner's documents a page at a time: the newest
// hundred, and Show more for the rest, until there are no more.
func TestBrowserConsoleShowsMore(t *testing.T) {
	e := newUIEnv(t)
	var ids []string // newest first
	for i := range 105 {
		d := &store.Document{ProjectID: e.project.ID, OwnerID: e.project.ID, Name: fmt.Sprintf("note-%03d.txt", i), Format: "text"}
		if _, err := e.store.CreateDocument(d, store.Bytes([]byte(fmt.Sprintf("Note %d about the harbour.", i))), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		ids = append([]string{d.ID}, ids...)
	}
	e.engine.JobsChanged("") // queued behind the API's back: wake the workers
	b := newBrowser(t)
	b.do("open the console and paste the key",
		chromedp.Navigate(e.base+"/console"),
		chromedp.WaitVisible(chromedp.ID("api-key")),
		chromedp.SendKeys(chromedp.ID("api-key"), e.key),
		chromedp.Click(chromedp.ID("connect")),
		chromedp.WaitVisible(chromedp.ID("workspace")),
	)
	rows := `[...document.querySelectorAll('#documents tr')].map(tr => tr.dataset.documentId)`
	b.waitFor("the first page", `document.querySelectorAll('#documents tr').length === 100 && !document.getElementById('more-documents').hidden`, 10*time.Second)
	if got := evaluate[[]string](b, rows); !slices.Equal(got, ids[:100]) {
		t.Fatalf("first page: %d rows, not the 100 newest documents newest first", len(got))
	}
	b.do("show more", chromedp.Click(chromedp.ID("more-documents")))
	b.waitFor("the rest", `document.querySelectorAll('#documents tr').length === 105 && document.getElementById('more-documents').hidden`, 10*time.Second)
	// A refresh asks again for as many as the table shows. The old rows
	// are marked, to know when the new ones have replaced them.
	b.waitFor("documents processed", `[...document.querySelectorAll('#documents .badge')].every(e => e.dataset.status === 'SUCCEEDED')`, jobTimeout)
	evaluate[int](b, `document.querySelectorAll('#documents tr').forEach(tr => tr.dataset.old = '1'), 0`)
	b.do("refresh", chromedp.Click(chromedp.ID("refresh")))
	b.waitFor("the table redrawn", `document.querySelectorAll('#documents tr').length > 0 && !document.querySelector('#documents tr[data-old]')`, 10*time.Second)
	if got := evaluate[[]string](b, rows); !slices.Equal(got, ids) || !evaluate[bool](b, `document.getElementById('more-documents').hidden`) {
		t.Fatalf("after show more and a refresh: %d rows, want all 105 newest first and nothing more to show", len(got))
	}
	b.noProblems()
}

// consoleOpensSubpage clicks the first chunk's subpage button and checks a
// new tab opens on a PDF.
func consoleOpensSubpage(t *testing.T, b *browser) {
	t.Helper()
	opened := chromedp.WaitNewTarget(b.ctx, func(info *target.Info) bool {
		return strings.Contains(info.URL, "/subpages/")
	})
	b.do("open the subpage", chromedp.Click(chromedp.CSS("#chunks li.chunk button.subpage")))
	var id target.ID
	select {
	case id = <-opened:
	case <-b.ctx.Done():
		msg := evaluate[string](b, `document.getElementById('console-error').textContent`)
		t.Fatalf("no tab opened on a subpage (console error: %q): %v", msg, b.ctx.Err())
	}
	infos, err := chromedp.Targets(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var subpageURL string
	for _, info := range infos {
		if info.TargetID == id {
			subpageURL = info.URL
		}
	}
	resp, err := http.Get(subpageURL)
	if err != nil {
		t.Fatalf("GET %s: %v", subpageURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/pdf") || !bytes.HasPrefix(body, []byte("%PDF-")) {
		t.Errorf("the subpage %s is %d %s, not a PDF", subpageURL, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// reportPages is a three-page document whose second page answers the
// console test's question.
var reportPages = []string{
	"Quarterly field report. This report covers the survey work of the harbour team during the third quarter. Staffing stayed the same and the boat was serviced in July.",
	"Tide gauge installation. The new tide gauge was installed on the north pier, next to the ferry ramp. The tide gauge records the water level every minute and sends it to the harbour office.",
	"Budget and next steps. The dredging budget is unchanged. Next quarter the team will survey the south channel and replace two navigation buoys.",
}

// The upload page refuses a file over the limit before sending it, and
// says by how much: in bytes when the sizes would round alike.
func TestBrowserSessionRefusesLargeFiles(t *testing.T) {
	e := newUIEnv(t, func(o *uiOptions) { o.maxFileBytes = 4 << 10 })
	s := e.newSession(t, e.customer.ID, []string{"file_upload"}, "https://app.example/done", "https://app.example/cancel")
	b := newBrowser(t)
	b.do("open the page", chromedp.Navigate(e.base+s.path()), chromedp.WaitVisible(chromedp.ID("dropzone")))
	files := writeFiles(t, map[string][]byte{
		"just-over.txt": bytes.Repeat([]byte("x"), 4<<10+1),
		"far-over.txt":  bytes.Repeat([]byte("x"), 6<<10),
	}, "just-over.txt", "far-over.txt")
	b.do("choose two files over the limit", chromedp.SetUploadFiles(chromedp.ID("file-input"), files))
	b.waitFor("both refused", `document.querySelectorAll('#file-list li[data-status="FAILED"]').length === 2`, 5*time.Second)
	got := evaluate[[]string](b, `[...document.querySelectorAll('#file-list .file-error')].map(e => e.textContent)`)
	want := []string{
		"This file is 4097 bytes, over the limit of 4096 bytes (4 KiB).",
		"This file is 6.0 KiB, over the limit of 4 KiB.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the page says %q, want %q", got, want)
	}
	b.noProblems()
}
