// Package drivetest runs a stand-in for Google's OAuth 2.0 endpoints and the
// parts of the Drive v3 API docsift uses, for tests only: the consent page
// (which consents, or refuses, at once), the token endpoint (authorization
// codes checked against their PKCE challenge, refresh grants), revocation,
// and files.list, files.get (metadata and alt=media) and files.export.
//
// Real Google accounts cannot be used in tests, and what needs testing is
// docsift's handling of the awkward cases, so the stand-in favours control
// over fidelity: it answers the requests the real client libraries send the
// way Google documents, and can be told to refuse consent, expire access
// tokens early, answer 403 rateLimitExceeded, or report a file far larger
// than it will ever serve. It records what it saw (request URLs, secrets it
// issued, downloads, revocations) so tests can check what must not happen.
package drivetest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Google's MIME types for its own formats.
const (
	FolderType       = "application/vnd.google-apps.folder"
	DocumentType     = "application/vnd.google-apps.document"
	SpreadsheetType  = "application/vnd.google-apps.spreadsheet"
	PresentationType = "application/vnd.google-apps.presentation"

	// readonlyScope is the scope the API calls need (drive would do too).
	readonlyScope = "https://www.googleapis.com/auth/drive.readonly"
	fullScope     = "https://www.googleapis.com/auth/drive"

	// defaultAccessLifetime is the expires_in of access tokens, as Google's.
	defaultAccessLifetime = time.Hour
	// codeLifetime bounds the time between consent and the code exchange.
	codeLifetime = 10 * time.Minute
	// fillerCap is the most a file without Content is served of its reported
	// size before the stand-in cuts the connection: a client that ignores
	// sizes and limits sees a broken download, not 2 GB.
	fillerCap = 64 << 20
	// defaultPageSize is files.list's page size when none is asked for.
	defaultPageSize = 100
)

// File is one item of the stand-in's Drive. Root is the parent id of the
// top folder ("My Drive"), as in Google's API.
type File struct {
	ID       string
	Name     string
	MimeType string
	Parents  []string // default: root
	// Content is what alt=media serves. A nil Content with a Size serves
	// filler bytes, up to fillerCap.
	Content []byte
	// Size is the size files.get and files.list report; 0 means
	// len(Content). Google's own formats report none.
	Size         int64
	ModifiedTime time.Time
	// Exports holds what files.export serves, by MIME type, for Google's
	// own formats.
	Exports map[string][]byte
	Trashed bool
}

// Root is the id of the root folder.
const Root = "root"

// Revocation is one token revoked at the revoke endpoint.
type Revocation struct {
	Token   string
	Refresh bool // it was a refresh token (the whole grant)
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// The endpoints, for the OAuth client and the Drive client.
	AuthURL, TokenURL, RevokeURL, APIURL string
	// URL is the server's base address.
	URL string

	clientID, clientSecret string

	mu             sync.Mutex
	redirects      map[string]bool
	files          map[string]*File
	codes          map[string]*authCode
	access         map[string]*accessToken
	refresh        map[string]*refreshGrant
	denyConsent    bool
	rateLimited    int
	accessLifetime time.Duration
	authRequests   []url.Values
	requestURLs    []string
	secrets        []string
	downloads      map[string]int
	served         map[string]int64
	exports        map[string]int
	refreshes      int
	apiCalls       int
	revocations    chan Revocation
	nextID         int
}

type authCode struct {
	redirectURI, challenge, scope string
	issued                        time.Time
}

type accessToken struct {
	refresh string
	scope   string
	expires time.Time
}

type refreshGrant struct {
	scope   string
	revoked bool
}

// New starts a stand-in that accepts the OAuth client clientID with
// clientSecret, and stops it when the test ends.
func New(t testing.TB, clientID, clientSecret string) *Server {
	t.Helper()
	s := &Server{
		clientID: clientID, clientSecret: clientSecret,
		redirects:      map[string]bool{},
		files:          map[string]*File{},
		codes:          map[string]*authCode{},
		access:         map[string]*accessToken{},
		refresh:        map[string]*refreshGrant{},
		downloads:      map[string]int{},
		served:         map[string]int64{},
		exports:        map[string]int{},
		accessLifetime: defaultAccessLifetime,
		revocations:    make(chan Revocation, 64),
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	s.AuthURL = ts.URL + "/o/oauth2/auth"
	s.TokenURL = ts.URL + "/token"
	s.RevokeURL = ts.URL + "/revoke"
	s.APIURL = ts.URL + "/drive/v3/"
	return s
}

// AllowRedirect registers a redirect URI of the OAuth client, as an
// operator does in the Google Cloud console.
func (s *Server) AllowRedirect(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirects[uri] = true
}

// AddFile puts f in the Drive and returns it with its id (a new one when
// f.ID is empty) and defaults filled in.
func (s *Server) AddFile(f File) File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.ID == "" {
		s.nextID++
		f.ID = fmt.Sprintf("f%04dXyZ_-%d", s.nextID, s.nextID)
	}
	if len(f.Parents) == 0 {
		f.Parents = []string{Root}
	}
	if f.ModifiedTime.IsZero() {
		f.ModifiedTime = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	}
	if f.Size == 0 && !strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
		f.Size = int64(len(f.Content))
	}
	cp := f
	s.files[f.ID] = &cp
	return f
}

// DenyConsent makes the consent page refuse (the user clicks Cancel)
// until called with false.
func (s *Server) DenyConsent(deny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denyConsent = deny
}

// RateLimit answers the next n Drive API requests with 403
// rateLimitExceeded, as Google does when a user or project sends too many.
func (s *Server) RateLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimited = n
}

// ExpireAccessTokens ends every access token issued so far, before the
// expiry it was issued with: the client believes it valid, the API answers
// 401, and only a refresh helps (as after clock skew or a long suspend).
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.access {
		a.expires = time.Time{}
	}
}

// SetAccessTokenLifetime sets the expires_in of access tokens issued from
// now on.
func (s *Server) SetAccessTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accessLifetime = d
}

// Revocations delivers each token revoked at the revoke endpoint.
func (s *Server) Revocations() <-chan Revocation { return s.revocations }

// LiveGrants counts the refresh tokens issued and not revoked.
func (s *Server) LiveGrants() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, g := range s.refresh {
		if !g.revoked {
			n++
		}
	}
	return n
}

// AuthRequests returns the query of every request to the consent page.
func (s *Server) AuthRequests() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authRequests)
}

// RequestURLs returns the path and query of every request served.
func (s *Server) RequestURLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requestURLs)
}

// Secrets returns every authorization code, access token and refresh token
// the stand-in issued, for tests that check none of them leaked.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.secrets)
}

// Downloads reports how often alt=media was asked for file id, and how
// many of its bytes were written.
func (s *Server) Downloads(id string) (requests int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[id], s.served[id]
}

// Exports reports how often file id was exported.
func (s *Server) Exports(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exports[id]
}

// Refreshes counts the refresh grants served.
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

// APICalls counts the Drive API requests, refused ones included.
func (s *Server) APICalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiCalls
}

// ServeHTTP routes a request to the endpoint it is for.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requestURLs = append(s.requestURLs, r.URL.RequestURI())
	s.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/o/oauth2/auth" && r.Method == http.MethodGet:
		s.authorize(w, r)
	case p == "/token" && r.Method == http.MethodPost:
		s.token(w, r)
	case p == "/revoke" && r.Method == http.MethodPost:
		s.revoke(w, r)
	case strings.HasPrefix(p, "/drive/v3/files") && r.Method == http.MethodGet:
		s.api(w, r)
	default:
		http.NotFound(w, r)
	}
}

// authorize is the consent page: it consents (or refuses) at once and
// sends the browser back to the redirect URI, as Google does after the
// user clicks Allow (or Cancel).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.authRequests = append(s.authRequests, q)
	deny := s.denyConsent
	registered := s.redirects[q.Get("redirect_uri")]
	s.mu.Unlock()
	switch {
	case q.Get("client_id") != s.clientID:
		http.Error(w, "Error 401: invalid_client. The OAuth client was not found.", http.StatusUnauthorized)
		return
	case !registered:
		http.Error(w, "Error 400: redirect_uri_mismatch", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "Error 400: unsupported_response_type", http.StatusBadRequest)
		return
	case q.Get("scope") == "":
		http.Error(w, "Error 400: invalid_request: missing scope", http.StatusBadRequest)
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		// Google accepts plain PKCE and none at all; the stand-in insists
		// on S256 so that a client that drops PKCE fails its tests.
		http.Error(w, "Error 400: invalid_request: this client must send an S256 code_challenge", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	if state := q.Get("state"); state != "" {
		v.Set("state", state)
	}
	if deny {
		v.Set("error", "access_denied")
	} else {
		code := s.newSecret("4/code-")
		s.mu.Lock()
		s.codes[code] = &authCode{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), scope: q.Get("scope"), issued: time.Now()}
		s.mu.Unlock()
		v.Set("code", code)
		v.Set("scope", q.Get("scope"))
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// tokenResponse is the token endpoint's answer.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
	TokenType    string `json:"token_type"`
}

// token exchanges an authorization code (checking its PKCE verifier) or a
// refresh token for an access token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.clientID || secret != s.clientSecret {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "Unauthorized")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		s.exchangeCode(w, r)
	case "refresh_token":
		s.refreshGrant(w, r)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type")
	}
}

func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	s.mu.Lock()
	code := s.codes[f.Get("code")]
	delete(s.codes, f.Get("code")) // a code works once, even when the exchange fails
	s.mu.Unlock()
	switch {
	case code == nil:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Malformed auth code.")
		return
	case time.Since(code.issued) > codeLifetime:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Auth code expired.")
		return
	case f.Get("redirect_uri") != code.redirectURI:
		oauthError(w, http.StatusBadRequest, "redirect_uri_mismatch", "Bad Request")
		return
	case f.Get("code_verifier") == "":
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Missing code verifier.")
		return
	case challenge(f.Get("code_verifier")) != code.challenge:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid code verifier.")
		return
	}
	rt := s.newSecret("1//refresh-")
	s.mu.Lock()
	s.refresh[rt] = &refreshGrant{scope: code.scope}
	s.mu.Unlock()
	resp := s.issueAccess(rt, code.scope)
	resp.RefreshToken = rt
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request) {
	rt := r.PostForm.Get("refresh_token")
	s.mu.Lock()
	g := s.refresh[rt]
	if g != nil && !g.revoked {
		s.refreshes++
	}
	s.mu.Unlock()
	if g == nil || g.revoked {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Token has been expired or revoked.")
		return
	}
	writeJSON(w, http.StatusOK, s.issueAccess(rt, g.scope))
}

func (s *Server) issueAccess(refresh, scope string) tokenResponse {
	at := s.newSecret("ya29.access-")
	s.mu.Lock()
	life := s.accessLifetime
	s.access[at] = &accessToken{refresh: refresh, scope: scope, expires: time.Now().Add(life)}
	s.mu.Unlock()
	return tokenResponse{AccessToken: at, ExpiresIn: int(life / time.Second), Scope: scope, TokenType: "Bearer"}
}

// revoke ends a grant: revoking either of its tokens ends both, as at
// Google. The token comes in the form body.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	tok := r.Form.Get("token")
	s.mu.Lock()
	rt, isRefresh := tok, true
	if a := s.access[tok]; a != nil {
		rt, isRefresh = a.refresh, false
	}
	g := s.refresh[rt]
	if g != nil {
		g.revoked = true
		for k, a := range s.access {
			if a.refresh == rt {
				delete(s.access, k)
			}
		}
	}
	s.mu.Unlock()
	if g == nil {
		oauthError(w, http.StatusBadRequest, "invalid_token", "Token expired or revoked")
		return
	}
	select {
	case s.revocations <- Revocation{Token: tok, Refresh: isRefresh}:
	default:
	}
	w.WriteHeader(http.StatusOK)
}

// api serves /drive/v3/files, /drive/v3/files/{id} and
// /drive/v3/files/{id}/export for a valid bearer token.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.apiCalls++
	limited := s.rateLimited > 0
	if limited {
		s.rateLimited--
	}
	s.mu.Unlock()
	if status, reason, msg := s.checkBearer(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
		}
		apiError(w, status, reason, msg)
		return
	}
	if limited {
		apiError(w, http.StatusForbidden, "rateLimitExceeded", "Rate Limit Exceeded")
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/drive/v3/files")
	switch {
	case rest == "":
		s.list(w, r)
	case strings.HasSuffix(rest, "/export"):
		s.export(w, r, strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/export"))
	default:
		s.get(w, r, strings.TrimPrefix(rest, "/"))
	}
}

func (s *Server) checkBearer(r *http.Request) (status int, reason, msg string) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return http.StatusUnauthorized, "required", "Login Required."
	}
	if r.URL.Query().Has("access_token") {
		return http.StatusBadRequest, "badRequest", "send tokens in the Authorization header, not the URL"
	}
	s.mu.Lock()
	a := s.access[tok]
	s.mu.Unlock()
	switch {
	case a == nil || !time.Now().Before(a.expires):
		return http.StatusUnauthorized, "authError", "Request had invalid authentication credentials. Expected OAuth 2 access token."
	case !strings.Contains(" "+a.scope+" ", " "+readonlyScope+" ") && !strings.Contains(" "+a.scope+" ", " "+fullScope+" "):
		return http.StatusForbidden, "insufficientPermissions", "Request had insufficient authentication scopes."
	}
	return 0, "", ""
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	match, err := parseQuery(q.Get("q"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid", "Invalid Value: "+err.Error())
		return
	}
	size := defaultPageSize
	if v := q.Get("pageSize"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 1000 {
			apiError(w, http.StatusBadRequest, "invalid", "Invalid value for pageSize")
			return
		}
	}
	offset := 0
	if pt := q.Get("pageToken"); pt != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(pt, "page~"))
		if err != nil || !strings.HasPrefix(pt, "page~") || n < 0 {
			apiError(w, http.StatusBadRequest, "invalid", "Invalid Value: pageToken")
			return
		}
		offset = n
	}
	s.mu.Lock()
	var hits []File
	for _, f := range s.files {
		if match(f) {
			hits = append(hits, *f)
		}
	}
	s.mu.Unlock()
	foldersFirst := strings.HasPrefix(strings.ReplaceAll(q.Get("orderBy"), " ", ""), "folder")
	sort.Slice(hits, func(i, j int) bool {
		if fi, fj := hits[i].MimeType == FolderType, hits[j].MimeType == FolderType; foldersFirst && fi != fj {
			return fi
		}
		if a, b := strings.ToLower(hits[i].Name), strings.ToLower(hits[j].Name); a != b {
			return a < b
		}
		return hits[i].ID < hits[j].ID
	})
	fields := parseFields(q.Get("fields"))
	out := map[string]any{}
	if fields.wants("kind") {
		out["kind"] = "drive#fileList"
	}
	page := []map[string]any{}
	for i := offset; i < len(hits) && i < offset+size; i++ {
		page = append(page, fileJSON(hits[i], fields.sub("files")))
	}
	out["files"] = page
	if offset+size < len(hits) && fields.wants("nextPageToken") {
		out["nextPageToken"] = "page~" + strconv.Itoa(offset+size)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) lookup(w http.ResponseWriter, id string) (File, bool) {
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "notFound", "File not found: "+id+".")
		return File{}, false
	}
	return *f, true
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, id string) {
	f, ok := s.lookup(w, id)
	if !ok {
		return
	}
	if r.URL.Query().Get("alt") != "media" {
		writeJSON(w, http.StatusOK, fileJSON(f, parseFields(r.URL.Query().Get("fields"))))
		return
	}
	if strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
		apiError(w, http.StatusForbidden, "fileNotDownloadable", "Only files with binary content can be downloaded. Use Export with Docs Editors files.")
		return
	}
	s.mu.Lock()
	s.downloads[id]++
	s.mu.Unlock()
	w.Header().Set("Content-Type", f.MimeType)
	body := io.Reader(bytes.NewReader(f.Content))
	if f.Content == nil {
		body = io.LimitReader(filler{}, min(f.Size, fillerCap))
	}
	s.stream(w, id, body)
	if f.Content == nil && f.Size > fillerCap {
		panic(http.ErrAbortHandler) // never serve the rest: cut the connection
	}
}

// stream copies body to w in small writes, counting what was written, so
// a client that stops reading early is seen to have stopped.
func (s *Server) stream(w http.ResponseWriter, id string, body io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			m, err := w.Write(buf[:n])
			s.mu.Lock()
			s.served[id] += int64(m)
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}

func (s *Server) export(w http.ResponseWriter, r *http.Request, id string) {
	f, ok := s.lookup(w, id)
	if !ok {
		return
	}
	want := r.URL.Query().Get("mimeType")
	if !strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
		apiError(w, http.StatusForbidden, "fileNotExportable", "Export only supports Docs Editors files.")
		return
	}
	content, ok := f.Exports[want]
	if !ok {
		apiError(w, http.StatusBadRequest, "badRequest", "The requested conversion is not supported.")
		return
	}
	s.mu.Lock()
	s.exports[id]++
	s.mu.Unlock()
	w.Header().Set("Content-Type", want)
	s.stream(w, id, bytes.NewReader(content))
}

// fileJSON is a file as the API shows it, limited to fields.
func fileJSON(f File, fields fieldSet) map[string]any {
	all := map[string]any{
		"kind":         "drive#file",
		"id":           f.ID,
		"name":         f.Name,
		"mimeType":     f.MimeType,
		"parents":      f.Parents,
		"modifiedTime": f.ModifiedTime.UTC().Format("2006-01-02T15:04:05.000Z"),
		"trashed":      f.Trashed,
	}
	if !strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
		all["size"] = strconv.FormatInt(f.Size, 10) // int64 travels as a string
	}
	out := map[string]any{}
	for k, v := range all {
		if fields.wants(k) {
			out[k] = v
		}
	}
	return out
}

// fieldSet is a parsed fields parameter: "nextPageToken, files(id, name)".
// A nil set (no parameter) means Google's defaults: every field here.
type fieldSet map[string]fieldSet

func (f fieldSet) wants(name string) bool {
	if f == nil {
		return true
	}
	_, ok := f[name]
	return ok
}

func (f fieldSet) sub(name string) fieldSet {
	if f == nil {
		return nil
	}
	return f[name]
}

func parseFields(s string) fieldSet {
	s = strings.ReplaceAll(s, " ", "")
	if s == "" || s == "*" {
		return nil
	}
	set, _ := parseFieldList(s)
	return set
}

func parseFieldList(s string) (fieldSet, string) {
	set := fieldSet{}
	for s != "" {
		i := strings.IndexAny(s, ",()")
		if i < 0 {
			set[s] = nil
			return set, ""
		}
		name := s[:i]
		switch s[i] {
		case ',':
			if name != "" {
				set[name] = nil
			}
			s = s[i+1:]
		case '(':
			var inner fieldSet
			inner, s = parseFieldList(s[i+1:])
			set[name] = inner
			s = strings.TrimPrefix(s, ",")
		case ')':
			if name != "" {
				set[name] = nil
			}
			return set, s[i+1:]
		}
	}
	return set, ""
}

// parseQuery understands the search terms docsift sends, joined by "and":
// 'ID' in parents, name contains '…', name = '…', mimeType = / != '…',
// trashed = true/false. Anything else is an invalid query, as at Google.
func parseQuery(q string) (func(*File) bool, error) {
	var terms []func(*File) bool
	rest := strings.TrimSpace(q)
	for rest != "" {
		var term func(*File) bool
		var err error
		term, rest, err = parseTerm(strings.TrimSpace(rest))
		if err != nil {
			return nil, err
		}
		terms = append(terms, term)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		next, ok := cutWord(rest, "and")
		if !ok {
			return nil, fmt.Errorf("expected and at %q", rest)
		}
		rest = next
	}
	return func(f *File) bool {
		for _, t := range terms {
			if !t(f) {
				return false
			}
		}
		return true
	}, nil
}

func parseTerm(s string) (func(*File) bool, string, error) {
	if strings.HasPrefix(s, "'") {
		id, rest, err := quoted(s)
		if err != nil {
			return nil, "", err
		}
		rest, ok := cutWord(strings.TrimSpace(rest), "in")
		if !ok {
			return nil, "", fmt.Errorf("expected in after %q", id)
		}
		rest, ok = cutWord(strings.TrimSpace(rest), "parents")
		if !ok {
			return nil, "", fmt.Errorf("expected parents after in")
		}
		return func(f *File) bool { return slices.Contains(f.Parents, id) }, rest, nil
	}
	field, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	op, rest, _ := strings.Cut(rest, " ")
	rest = strings.TrimSpace(rest)
	if field == "trashed" && op == "=" {
		val, after, _ := strings.Cut(rest, " ")
		if val != "true" && val != "false" {
			return nil, "", fmt.Errorf("trashed takes true or false")
		}
		want := val == "true"
		return func(f *File) bool { return f.Trashed == want }, after, nil
	}
	val, after, err := quoted(rest)
	if err != nil {
		return nil, "", err
	}
	switch {
	case field == "name" && op == "contains":
		lower := strings.ToLower(val)
		return func(f *File) bool { return strings.Contains(strings.ToLower(f.Name), lower) }, after, nil
	case field == "name" && op == "=":
		return func(f *File) bool { return f.Name == val }, after, nil
	case field == "mimeType" && op == "=":
		return func(f *File) bool { return f.MimeType == val }, after, nil
	case field == "mimeType" && op == "!=":
		return func(f *File) bool { return f.MimeType != val }, after, nil
	}
	return nil, "", fmt.Errorf("unsupported term %s %s", field, op)
}

// quoted reads a '…' string with \' and \\ escapes from the start of s.
func quoted(s string) (string, string, error) {
	if !strings.HasPrefix(s, "'") {
		return "", "", fmt.Errorf("expected a quoted string at %q", s)
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("unfinished escape")
			}
			i++
			b.WriteByte(s[i])
		case '\'':
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", fmt.Errorf("unterminated string")
}

func cutWord(s, word string) (string, bool) {
	if len(s) < len(word) || !strings.EqualFold(s[:len(word)], word) {
		return "", false
	}
	rest := s[len(word):]
	if rest != "" && rest[0] != ' ' {
		return "", false
	}
	return rest, true
}

// challenge is the S256 code challenge of a PKCE verifier.
func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// newSecret returns a random token with prefix and records it.
func (s *Server) newSecret(prefix string) string {
	b := make([]byte, 24)
	rand.Read(b)
	secret := prefix + base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	s.secrets = append(s.secrets, secret)
	s.mu.Unlock()
	return secret
}

// filler is an endless stream of bytes standing in for a large file.
type filler struct{}

func (filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// apiError writes an error in the Drive API's shape.
func apiError(w http.ResponseWriter, status int, reason, msg string) {
	domain := "global"
	if reason == "rateLimitExceeded" {
		domain = "usageLimits"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"code":    status,
		"message": msg,
		"errors":  []map[string]string{{"domain": domain, "reason": reason, "message": msg}},
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
