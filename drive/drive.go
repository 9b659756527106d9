// Package drive imports files from a user's Google Drive: the OAuth 2.0
// sign-in (authorization code with PKCE), the grants it yields, listing the
// user's files, and fetching one within a size limit, with Google's own
// formats exported to ones docsift reads.
//
// It knows Google and nothing of docsift. Grants are filed under a key the
// caller chooses (the server uses the upload session's id) and end at a
// deadline the caller gives (the session's expiry); what may be imported,
// and what becomes of the bytes, is the caller's business.
package drive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	drivev3 "google.golang.org/api/drive/v3"
)

// Scope is the one permission docsift asks for: reading files, nothing
// else (no changes, no sharing).
const Scope = drivev3.DriveReadonlyScope

const (
	// googleRevokeURL is where a grant is ended; golang.org/x/oauth2/google
	// names the other endpoints but not this one.
	googleRevokeURL = "https://oauth2.googleapis.com/revoke"
	// googleAPIURL is the Drive v3 API's base, as drive/v3 has it.
	googleAPIURL = "https://www.googleapis.com/drive/v3/"

	// tokenTimeout bounds one call to the token or revoke endpoint.
	tokenTimeout = 30 * time.Second
	// defaultRetryBase is the first wait after a rate-limited answer; it
	// doubles with each retry.
	defaultRetryBase = time.Second
)

// Endpoints are where the client finds Google. Tests point them at a
// stand-in; in production they are Google's.
type Endpoints struct {
	AuthURL   string // the consent page the user's browser is sent to
	TokenURL  string // code exchange and refresh
	RevokeURL string // ends a grant
	APIURL    string // the Drive v3 API, ending in /drive/v3/
}

// GoogleEndpoints are Google's production endpoints.
func GoogleEndpoints() Endpoints {
	return Endpoints{
		AuthURL:   google.Endpoint.AuthURL,
		TokenURL:  google.Endpoint.TokenURL,
		RevokeURL: googleRevokeURL,
		APIURL:    googleAPIURL,
	}
}

// Config is an OAuth client registered with Google (type "Web
// application") and where to reach Google.
type Config struct {
	ClientID     string
	ClientSecret string
	// RedirectURL is where Google sends the user back; it must be one of
	// the client's authorized redirect URIs.
	RedirectURL string
	// Endpoints default, field by field, to GoogleEndpoints.
	Endpoints Endpoints
	// HTTPClient carries every request to Google; nil: one without a
	// total timeout (downloads take their context's).
	HTTPClient *http.Client
	// RetryBase is the first wait after Google answers "rate limit
	// exceeded"; 0: one second.
	RetryBase time.Duration
	// Log receives what goes wrong with no caller to tell (a revocation at
	// a grant's deadline). It never receives a token. Nil: discarded.
	Log *slog.Logger
}

// Client signs users in to Google Drive and reads their files. It keeps
// the sign-ins under way and the grants they produced; it is safe for
// concurrent use.
type Client struct {
	oauth     oauth2.Config
	ep        Endpoints
	http      *http.Client // Drive API requests
	tokenHTTP *http.Client // token and revoke endpoints, with a timeout
	retryBase time.Duration
	log       *slog.Logger

	mu      sync.Mutex
	signIns map[string]*SignIn // sha256(state) → sign-in under way
	grants  map[string]*grant  // key → grant
	closed  bool
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	switch {
	case cfg.ClientID == "":
		return nil, errors.New("drive: the OAuth client id is missing")
	case cfg.ClientSecret == "":
		return nil, errors.New("drive: the OAuth client secret is missing")
	case !strings.HasPrefix(cfg.RedirectURL, "http://") && !strings.HasPrefix(cfg.RedirectURL, "https://"):
		return nil, fmt.Errorf("drive: the redirect URL %q is not an absolute http(s) URL", cfg.RedirectURL)
	}
	ep := cfg.Endpoints
	def := GoogleEndpoints()
	if ep.AuthURL == "" {
		ep.AuthURL = def.AuthURL
	}
	if ep.TokenURL == "" {
		ep.TokenURL = def.TokenURL
	}
	if ep.RevokeURL == "" {
		ep.RevokeURL = def.RevokeURL
	}
	if ep.APIURL == "" {
		ep.APIURL = def.APIURL
	}
	if !strings.HasSuffix(ep.APIURL, "/") {
		ep.APIURL += "/"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	retry := cfg.RetryBase
	if retry <= 0 {
		retry = defaultRetryBase
	}
	return &Client{
		oauth: oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: cfg.ClientSecret,
			RedirectURL:  cfg.RedirectURL,
			Scopes:       []string{Scope},
			// Google takes the client's credentials in the form body.
			Endpoint: oauth2.Endpoint{AuthURL: ep.AuthURL, TokenURL: ep.TokenURL, AuthStyle: oauth2.AuthStyleInParams},
		},
		ep:        ep,
		http:      hc,
		tokenHTTP: &http.Client{Transport: hc.Transport, Timeout: tokenTimeout},
		retryBase: retry,
		log:       log,
		signIns:   map[string]*SignIn{},
		grants:    map[string]*grant{},
	}, nil
}

// Close revokes every grant still held, so that none outlives the process
// that kept it in memory, and refuses new ones.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	keys := make([]string, 0, len(c.grants))
	for k := range c.grants {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	var errs []error
	for _, k := range keys {
		errs = append(errs, c.Disconnect(ctx, k))
	}
	return errors.Join(errs...)
}

// tokenContext carries the token endpoint's HTTP client to golang.org/x/oauth2.
func (c *Client) tokenContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.tokenHTTP)
}
