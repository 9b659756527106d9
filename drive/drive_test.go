package drive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/drive"
	"github.com/docsift/docsift/internal/drivetest"
)

const (
	testClientID     = "docsift-test.apps.googleusercontent.com"
	testClientSecret = "GOCSPX-test-secret"
	testRedirect     = "http://docsift.test/oauth/google/callback"
	// eventDeadline bounds a wait for something the stand-in reports.
	eventDeadline = 10 * time.Second
)

// newClient returns a client pointed at a fresh stand-in.
func newClient(t *testing.T) (*drive.Client, *drivetest.Server) {
	t.Helper()
	g := drivetest.New(t, testClientID, testClientSecret)
	g.AllowRedirect(testRedirect)
	c, err := drive.New(drive.Config{
		ClientID: testClientID, ClientSecret: testClientSecret, RedirectURL: testRedirect,
		Endpoints: drive.Endpoints{AuthURL: g.AuthURL, TokenURL: g.TokenURL, RevokeURL: g.RevokeURL, APIURL: g.APIURL},
		RetryBase: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, g
}

// consent follows authURL the way a browser does up to the redirect back,
// and returns the query Google sends to the redirect URI.
func consent(t *testing.T, authURL string) url.Values {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("consent page: HTTP %d, want a redirect", resp.StatusCode)
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(back.String(), testRedirect) {
		t.Fatalf("consent redirected to %q, want %s", resp.Header.Get("Location"), testRedirect)
	}
	return back.Query()
}

// signIn connects key through the whole flow.
func signIn(t *testing.T, c *drive.Client, key string, deadline time.Time) {
	t.Helper()
	s, authURL, err := c.BeginSignIn(key, "resume-"+key, deadline)
	if err != nil {
		t.Fatal(err)
	}
	back := consent(t, authURL)
	claimed, err := c.ClaimSignIn(back.Get("state"))
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if claimed != s || claimed.Key != key || claimed.Resume != "resume-"+key {
		t.Fatalf("claimed %+v, want the sign-in begun for %s", claimed, key)
	}
	if err := c.FinishSignIn(context.Background(), claimed, back.Get("code")); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if !c.Connected(key) {
		t.Fatal("not connected after the sign-in")
	}
}

func TestSignInAsksForReadOnlyOfflineAccessWithPKCE(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "ses_a", time.Now().Add(time.Hour))
	reqs := g.AuthRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d consent requests", len(reqs))
	}
	q := reqs[0]
	want := map[string]string{
		"client_id": testClientID, "redirect_uri": testRedirect, "response_type": "code",
		"scope": "https://www.googleapis.com/auth/drive.readonly", "code_challenge_method": "S256",
		"access_type": "offline", "prompt": "consent",
	}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("consent request %s = %q, want %q", k, q.Get(k), v)
		}
	}
	if len(q.Get("state")) < 43 {
		t.Errorf("state %q is shorter than 256 bits", q.Get("state"))
	}
	if q.Has("code_verifier") || q.Has("client_secret") {
		t.Error("the consent URL carries the verifier or the client secret")
	}
}

func TestSignInStateIsSingleUseAndUnguessable(t *testing.T) {
	c, _ := newClient(t)
	_, authURL, err := c.BeginSignIn("ses_a", "r", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	back := consent(t, authURL)
	for _, bad := range []string{"", "nope", back.Get("state") + "x"} {
		if _, err := c.ClaimSignIn(bad); !errors.Is(err, drive.ErrUnknownSignIn) {
			t.Errorf("claim %q: %v, want ErrUnknownSignIn", bad, err)
		}
	}
	if _, err := c.ClaimSignIn(back.Get("state")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ClaimSignIn(back.Get("state")); !errors.Is(err, drive.ErrUnknownSignIn) {
		t.Errorf("second claim: %v, want ErrUnknownSignIn", err)
	}
}

func TestSignInExpiresWithItsDeadline(t *testing.T) {
	c, _ := newClient(t)
	if _, _, err := c.BeginSignIn("ses_a", "r", time.Now().Add(-time.Second)); !errors.Is(err, drive.ErrSignInExpired) {
		t.Errorf("begin after the deadline: %v", err)
	}
	s, _, err := c.BeginSignIn("ses_a", "r", time.Now().Add(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if s.Expires.After(s.Deadline) {
		t.Errorf("the sign-in outlives its deadline: %v > %v", s.Expires, s.Deadline)
	}
}

// A code is bound to the verifier of the sign-in that asked for it: the
// code of one sign-in cannot finish another.
func TestSignInCodeNeedsItsOwnVerifier(t *testing.T) {
	c, g := newClient(t)
	_, urlA, err := c.BeginSignIn("ses_a", "a", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_, urlB, err := c.BeginSignIn("ses_b", "b", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	backA, backB := consent(t, urlA), consent(t, urlB)
	a, err := c.ClaimSignIn(backA.Get("state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.FinishSignIn(context.Background(), a, backB.Get("code")); !errors.Is(err, drive.ErrSignInFailed) {
		t.Fatalf("finishing A with B's code: %v, want ErrSignInFailed", err)
	}
	if c.Connected("ses_a") || g.LiveGrants() != 0 {
		t.Error("a code with the wrong verifier made a grant")
	}
}

func TestDenyConsent(t *testing.T) {
	c, g := newClient(t)
	g.DenyConsent(true)
	_, authURL, err := c.BeginSignIn("ses_a", "r", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	back := consent(t, authURL)
	if back.Get("error") != "access_denied" || back.Has("code") {
		t.Fatalf("denied consent came back as %v", back)
	}
	s, err := c.ClaimSignIn(back.Get("state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.FinishSignIn(context.Background(), s, ""); !errors.Is(err, drive.ErrSignInFailed) {
		t.Errorf("finish without a code: %v", err)
	}
	if c.Connected("ses_a") {
		t.Error("connected after a refusal")
	}
}

func TestListFoldersSearchAndPages(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "k", time.Now().Add(time.Hour))
	reports := g.AddFile(drivetest.File{Name: "Reports", MimeType: drivetest.FolderType})
	g.AddFile(drivetest.File{Name: "q3.pdf", MimeType: "application/pdf", Content: []byte("%PDF-1.4"), Parents: []string{reports.ID}})
	g.AddFile(drivetest.File{Name: "Plan", MimeType: drivetest.DocumentType})
	g.AddFile(drivetest.File{Name: "O'Brien's notes.txt", MimeType: "text/plain", Content: []byte("hello")})
	g.AddFile(drivetest.File{Name: "gone.txt", MimeType: "text/plain", Content: []byte("x"), Trashed: true})
	for i := range 130 {
		g.AddFile(drivetest.File{Name: fmt.Sprintf("bulk-%03d.txt", i), MimeType: "text/plain", Content: []byte("x"), Parents: []string{reports.ID}})
	}
	ctx := context.Background()

	root, err := c.List(ctx, "k", drive.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range root.Files {
		names = append(names, f.Name)
	}
	if strings.Join(names, "|") != "Reports|O'Brien's notes.txt|Plan" || root.NextPageToken != "" {
		t.Errorf("root lists %q (next %q), want the folder first, then files by name, no trash", names, root.NextPageToken)
	}
	if !root.Files[0].Folder() || root.Files[2].Size != -1 || root.Files[1].Size != 5 || root.Files[1].ModifiedTime.IsZero() {
		t.Errorf("root items %+v", root.Files)
	}

	first, err := c.List(ctx, "k", drive.Query{Folder: reports.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Files) != 100 || first.NextPageToken == "" {
		t.Fatalf("first page: %d files, next %q", len(first.Files), first.NextPageToken)
	}
	second, err := c.List(ctx, "k", drive.Query{Folder: reports.ID, PageToken: first.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Files) != 31 || second.NextPageToken != "" {
		t.Errorf("second page: %d files, next %q", len(second.Files), second.NextPageToken)
	}

	found, err := c.List(ctx, "k", drive.Query{Name: "o'brien"})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Files) != 1 || found.Files[0].Name != "O'Brien's notes.txt" {
		t.Errorf("search for a name with a quote found %+v", found.Files)
	}
	if _, err := c.List(ctx, "k", drive.Query{Folder: "x' or name contains 'y"}); !errors.Is(err, drive.ErrBadID) {
		t.Errorf("a folder id that is a query: %v", err)
	}
	if _, err := c.List(ctx, "nobody", drive.Query{}); !errors.Is(err, drive.ErrNotConnected) {
		t.Errorf("listing without a grant: %v", err)
	}
}

func TestDownloadWithinTheLimit(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "k", time.Now().Add(time.Hour))
	ctx := context.Background()
	const limit = 4 << 10

	notes := g.AddFile(drivetest.File{Name: "notes.md", MimeType: "text/markdown", Content: []byte("# Tides\n\nHigh water at noon.")})
	doc := g.AddFile(drivetest.File{Name: "Plan", MimeType: drivetest.DocumentType, Exports: map[string][]byte{"application/pdf": []byte("%PDF-1.4 plan")}})
	sheet := g.AddFile(drivetest.File{Name: "Budget", MimeType: drivetest.SpreadsheetType, Exports: map[string][]byte{
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": []byte("PK xlsx")}})
	huge := g.AddFile(drivetest.File{Name: "archive scan.pdf", MimeType: "application/pdf", Size: 2 << 30})
	bigExport := g.AddFile(drivetest.File{Name: "Long report", MimeType: drivetest.DocumentType, Exports: map[string][]byte{"application/pdf": bytes.Repeat([]byte("x"), 16<<20)}})
	form := g.AddFile(drivetest.File{Name: "Survey", MimeType: "application/vnd.google-apps.form"})

	for _, tc := range []struct {
		id   string
		want string
	}{{notes.ID, "# Tides\n\nHigh water at noon."}, {doc.ID, "%PDF-1.4 plan"}, {sheet.ID, "PK xlsx"}} {
		f, err := c.Stat(ctx, "k", tc.id)
		if err != nil {
			t.Fatal(err)
		}
		data, err := downloadAll(ctx, c, f, limit)
		if err != nil || string(data) != tc.want {
			t.Errorf("download %s: %q, %v", f.Name, data, err)
		}
	}

	f, err := c.Stat(ctx, "k", huge.ID)
	if err != nil {
		t.Fatal(err)
	}
	var tooLarge *drive.TooLargeError
	if _, err := downloadAll(ctx, c, f, limit); !errors.As(err, &tooLarge) || tooLarge.Size != 2<<30 {
		t.Errorf("2 GB file: %v, want a TooLargeError with its size", err)
	}
	if n, _ := g.Downloads(huge.ID); n != 0 {
		t.Errorf("the 2 GB file was requested %d times", n)
	}

	f, err = c.Stat(ctx, "k", bigExport.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := downloadAll(ctx, c, f, limit); !errors.As(err, &tooLarge) || tooLarge.Size != -1 {
		t.Errorf("16 MB export: %v, want a TooLargeError", err)
	}

	f, err = c.Stat(ctx, "k", form.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := downloadAll(ctx, c, f, limit); !errors.Is(err, drive.ErrNotImportable) {
		t.Errorf("a Google Form: %v", err)
	}
	if _, err := c.Stat(ctx, "k", "doesNotExist"); !errors.Is(err, drive.ErrNotFound) {
		t.Errorf("stat of a missing file: %v", err)
	}
}

func TestRateLimitIsRetriedThenReported(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "k", time.Now().Add(time.Hour))
	g.AddFile(drivetest.File{Name: "a.txt", MimeType: "text/plain", Content: []byte("a")})
	ctx := context.Background()

	g.RateLimit(2)
	before := g.APICalls()
	if _, err := c.List(ctx, "k", drive.Query{}); err != nil {
		t.Fatalf("two rate-limited answers, then a list: %v", err)
	}
	if calls := g.APICalls() - before; calls != 3 {
		t.Errorf("%d calls, want 3 (two refused, one served)", calls)
	}

	g.RateLimit(100)
	if _, err := c.List(ctx, "k", drive.Query{}); !errors.Is(err, drive.ErrRateLimited) {
		t.Errorf("a lasting rate limit: %v, want ErrRateLimited", err)
	}
	if !c.Connected("k") {
		t.Error("a rate limit ended the grant")
	}
}

func TestExpiredAccessTokenIsRefreshed(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "k", time.Now().Add(time.Hour))
	ctx := context.Background()

	// Google no longer honours the token the client believes valid.
	g.ExpireAccessTokens()
	if _, err := c.List(ctx, "k", drive.Query{}); err != nil {
		t.Fatalf("list after the access token expired: %v", err)
	}
	if g.Refreshes() != 1 {
		t.Errorf("%d refreshes, want 1", g.Refreshes())
	}

	// Tokens that expire within the client's safety margin (10 s) are
	// refreshed before use.
	g.SetAccessTokenLifetime(time.Second)
	g.ExpireAccessTokens()
	for range 2 {
		if _, err := c.List(ctx, "k", drive.Query{}); err != nil {
			t.Fatal(err)
		}
	}
	if g.Refreshes() < 3 {
		t.Errorf("%d refreshes, want a refresh per call", g.Refreshes())
	}
}

func TestGrantRevokedByTheUserAsksForANewSignIn(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "k", time.Now().Add(time.Hour))
	// The user removes docsift's access in their Google account.
	revokeAll(t, g)
	if _, err := c.List(context.Background(), "k", drive.Query{}); !errors.Is(err, drive.ErrNotConnected) {
		t.Fatalf("list on a revoked grant: %v, want ErrNotConnected", err)
	}
	if c.Connected("k") {
		t.Error("the dead grant is still kept")
	}
}

// revokeAll revokes every refresh token the stand-in issued, as a user
// removing the app's access does.
func revokeAll(t *testing.T, g *drivetest.Server) {
	t.Helper()
	for _, s := range g.Secrets() {
		if !strings.HasPrefix(s, "1//") {
			continue
		}
		resp, err := http.PostForm(g.RevokeURL, url.Values{"token": {s}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		waitRevocation(t, g)
	}
}

func TestDisconnectAndDeadlineRevoke(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "k", time.Now().Add(time.Hour))
	if err := c.Disconnect(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	waitRevocation(t, g)
	if c.Connected("k") || g.LiveGrants() != 0 {
		t.Error("the grant lives on after Disconnect")
	}
	if err := c.Disconnect(context.Background(), "k"); err != nil {
		t.Errorf("a second Disconnect: %v", err)
	}

	// A grant ends by itself at its deadline.
	signIn(t, c, "short", time.Now().Add(200*time.Millisecond))
	waitRevocation(t, g)
	if c.Connected("short") || g.LiveGrants() != 0 {
		t.Error("the grant outlived its deadline")
	}

	// Signing in again replaces the grant and revokes the old one.
	signIn(t, c, "again", time.Now().Add(time.Hour))
	signIn(t, c, "again", time.Now().Add(time.Hour))
	waitRevocation(t, g)
	if g.LiveGrants() != 1 {
		t.Errorf("%d live grants after a second sign-in, want 1", g.LiveGrants())
	}

	// Close revokes what is left.
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitRevocation(t, g)
	if g.LiveGrants() != 0 {
		t.Error("Close left a grant alive")
	}
	if _, _, err := c.BeginSignIn("x", "r", time.Now().Add(time.Hour)); !errors.Is(err, drive.ErrClosed) {
		t.Errorf("sign-in after Close: %v", err)
	}
}

func waitRevocation(t *testing.T, g *drivetest.Server) drivetest.Revocation {
	t.Helper()
	select {
	case r := <-g.Revocations():
		if !r.Refresh {
			t.Errorf("an access token was revoked, want the refresh token (the whole grant)")
		}
		return r
	case <-time.After(eventDeadline):
		t.Fatal("no revocation reached Google")
	}
	return drivetest.Revocation{}
}

// No token travels in a URL: not to the API, not to the revoke endpoint.
func TestTokensNeverInURLs(t *testing.T) {
	c, g := newClient(t)
	signIn(t, c, "k", time.Now().Add(time.Hour))
	f := g.AddFile(drivetest.File{Name: "a.txt", MimeType: "text/plain", Content: []byte("a")})
	ctx := context.Background()
	if _, err := c.List(ctx, "k", drive.Query{}); err != nil {
		t.Fatal(err)
	}
	st, err := c.Stat(ctx, "k", f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := downloadAll(ctx, c, st, 1<<10); err != nil {
		t.Fatal(err)
	}
	if err := c.Disconnect(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	for _, u := range g.RequestURLs() {
		for _, s := range g.Secrets() {
			if strings.HasPrefix(s, "4/") {
				continue // codes come back in the redirect URL by design
			}
			if strings.Contains(u, url.QueryEscape(s)) || strings.Contains(u, s) {
				t.Errorf("a token travelled in the URL %s", u)
			}
		}
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	for _, cfg := range []drive.Config{
		{ClientSecret: "s", RedirectURL: testRedirect},
		{ClientID: "i", RedirectURL: testRedirect},
		{ClientID: "i", ClientSecret: "s", RedirectURL: "/oauth/google/callback"},
	} {
		if _, err := drive.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	c, err := drive.New(drive.Config{ClientID: "i", ClientSecret: "s", RedirectURL: testRedirect})
	if err != nil {
		t.Fatal(err)
	}
	_, authURL, err := c.BeginSignIn("k", "r", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(authURL, "https://accounts.google.com/o/oauth2/auth?") {
		t.Errorf("the default consent page is %s", authURL)
	}
}

// downloadAll reads what Download gives, as the server's spool does.
func downloadAll(ctx context.Context, c *drive.Client, f *drive.File, limit int64) ([]byte, error) {
	body, err := c.Download(ctx, "k", f, limit)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}
