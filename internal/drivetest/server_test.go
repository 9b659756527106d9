package drivetest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const (
	testID       = "client"
	testSecret   = "secret"
	testRedirect = "http://app.test/callback"
	testVerifier = "a-verifier-of-forty-three-characters-or-more-xx"
)

// authorize asks the consent page for a code with query q over the
// defaults and returns where it redirected (nil when it did not).
func authorize(t *testing.T, s *Server, change func(url.Values)) (*http.Response, url.Values) {
	t.Helper()
	q := url.Values{
		"client_id": {testID}, "redirect_uri": {testRedirect}, "response_type": {"code"},
		"scope": {readonlyScope}, "state": {"st"}, "code_challenge": {challenge(testVerifier)},
		"code_challenge_method": {"S256"},
	}
	if change != nil {
		change(q)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(s.AuthURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return resp, nil
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return resp, loc.Query()
}

func exchange(t *testing.T, s *Server, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(s.TokenURL, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func codeForm(code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {testRedirect},
		"code_verifier": {verifier}, "client_id": {testID}, "client_secret": {testSecret}}
}

func TestConsentChecksTheRequest(t *testing.T) {
	s := New(t, testID, testSecret)
	s.AllowRedirect(testRedirect)
	for name, change := range map[string]func(url.Values){
		"unknown client":        func(q url.Values) { q.Set("client_id", "other") },
		"unregistered redirect": func(q url.Values) { q.Set("redirect_uri", "http://evil.test/cb") },
		"no PKCE":               func(q url.Values) { q.Del("code_challenge") },
		"plain PKCE":            func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"no scope":              func(q url.Values) { q.Del("scope") },
	} {
		if resp, _ := authorize(t, s, change); resp.StatusCode == http.StatusFound {
			t.Errorf("%s: consent redirected", name)
		}
	}
	_, back := authorize(t, s, nil)
	if back.Get("state") != "st" || back.Get("code") == "" {
		t.Errorf("consent came back with %v", back)
	}
	s.DenyConsent(true)
	if _, back := authorize(t, s, nil); back.Get("error") != "access_denied" || back.Get("state") != "st" || back.Has("code") {
		t.Errorf("refusal came back with %v", back)
	}
}

func TestTokenEndpointChecksPKCEAndSingleUse(t *testing.T) {
	s := New(t, testID, testSecret)
	s.AllowRedirect(testRedirect)
	_, back := authorize(t, s, nil)
	if status, body := exchange(t, s, codeForm(back.Get("code"), testVerifier+"x")); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("wrong verifier: %d %v", status, body)
	}
	// The failed attempt spent the code.
	if status, _ := exchange(t, s, codeForm(back.Get("code"), testVerifier)); status != http.StatusBadRequest {
		t.Errorf("a spent code was exchanged: %d", status)
	}
	_, back = authorize(t, s, nil)
	status, body := exchange(t, s, codeForm(back.Get("code"), testVerifier))
	if status != http.StatusOK || body["refresh_token"] == nil || body["access_token"] == nil {
		t.Fatalf("exchange: %d %v", status, body)
	}
	bad := codeForm(back.Get("code"), testVerifier)
	bad.Set("client_secret", "wrong")
	if status, _ := exchange(t, s, bad); status != http.StatusUnauthorized {
		t.Errorf("wrong client secret: %d", status)
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {body["refresh_token"].(string)}, "client_id": {testID}, "client_secret": {testSecret}}
	if status, r := exchange(t, s, refresh); status != http.StatusOK || r["access_token"] == body["access_token"] {
		t.Errorf("refresh: %d %v", status, r)
	}
	if s.Refreshes() != 1 {
		t.Errorf("%d refreshes", s.Refreshes())
	}
}

func TestAPIListsWithFieldsAndRefusesTokensInURLs(t *testing.T) {
	s := New(t, testID, testSecret)
	s.AllowRedirect(testRedirect)
	s.AddFile(File{Name: "b.txt", MimeType: "text/plain", Content: []byte("bb")})
	s.AddFile(File{Name: "a doc", MimeType: DocumentType})
	_, back := authorize(t, s, nil)
	_, tok := exchange(t, s, codeForm(back.Get("code"), testVerifier))
	access := tok["access_token"].(string)

	get := func(rawQuery, bearer string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, s.APIURL+"files?"+rawQuery, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	q := url.Values{"q": {"'root' in parents and trashed = false"}, "fields": {"nextPageToken, files(id, name, size)"}, "pageSize": {"1"}}
	status, body := get(q.Encode(), access)
	files, _ := body["files"].([]any)
	if status != http.StatusOK || len(files) != 1 || body["nextPageToken"] == nil {
		t.Fatalf("first page: %d %v", status, body)
	}
	first := files[0].(map[string]any)
	if first["name"] != "a doc" || first["mimeType"] != nil || first["size"] != nil {
		t.Errorf("first item %v: want only the asked fields, and no size for a Doc", first)
	}
	q.Set("pageToken", body["nextPageToken"].(string))
	_, body = get(q.Encode(), access)
	if files, _ := body["files"].([]any); len(files) != 1 || files[0].(map[string]any)["size"] != "2" {
		t.Errorf("second page %v", body)
	}
	if status, _ := get("access_token="+access, access); status != http.StatusBadRequest {
		t.Errorf("a token in the URL: %d", status)
	}
	if status, _ := get("", ""); status != http.StatusUnauthorized {
		t.Errorf("no token: %d", status)
	}
	if status, _ := get("q="+url.QueryEscape("name has 'x'"), access); status != http.StatusBadRequest {
		t.Errorf("an unknown query term: %d", status)
	}
	s.ExpireAccessTokens()
	if status, _ := get("", access); status != http.StatusUnauthorized {
		t.Errorf("an expired token: %d", status)
	}
	if !strings.HasPrefix(access, "ya29.") {
		t.Errorf("access token %q", access)
	}
}
