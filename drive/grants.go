package drive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	drivev3 "google.golang.org/api/drive/v3"
	"google.golang.org/api/option"
)

// A grant is the tokens one sign-in produced, with the Drive client that
// uses them.
//
// Grants are kept in memory only, never on disk. A grant lives as long as
// the upload session it belongs to (an hour by default), so keeping it in
// memory costs little: there is no key to derive, store and rotate, nothing
// at rest that a backup or a copied data directory could give away, and
// nothing left behind by a crash. The price is that a restart forgets the
// grants: a clean shutdown revokes them first (Close), and the user signs in
// again, which is two clicks.
type grant struct {
	key    string
	tokens *grantTokens
	svc    *drivev3.Service
	timer  *time.Timer // revokes the grant at its deadline
}

// grantTokens is a grant's token source: the access token while Google
// says it is valid, a refreshed one after, and a forced refresh when Drive
// refuses a token that looked valid here.
type grantTokens struct {
	oauth *oauth2.Config
	ctx   context.Context // carries the token endpoint's HTTP client

	mu  sync.Mutex
	tok *oauth2.Token
}

// Token implements oauth2.TokenSource.
func (t *grantTokens) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok.Valid() {
		return t.tok, nil
	}
	if t.tok.RefreshToken == "" {
		return nil, ErrNotConnected
	}
	ctx, cancel := context.WithTimeout(t.ctx, tokenTimeout)
	defer cancel()
	tok, err := t.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: t.tok.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "unauthorized_client") {
			return nil, ErrNotConnected
		}
		if re != nil {
			return nil, fmt.Errorf("%w: refreshing the access token: HTTP %d %s", ErrUnavailable, re.Response.StatusCode, re.ErrorCode)
		}
		return nil, fmt.Errorf("%w: refreshing the access token: %w", ErrUnavailable, err)
	}
	t.tok = tok
	return tok, nil
}

// expire forgets the access token, so the next request refreshes it.
func (t *grantTokens) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tok = &oauth2.Token{RefreshToken: t.tok.RefreshToken}
}

// revocable is the token that ends the whole grant at Google: the refresh
// token, or the access token when there is none.
func (t *grantTokens) revocable() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok.RefreshToken != "" {
		return t.tok.RefreshToken
	}
	return t.tok.AccessToken
}

// keep files a new grant under key until deadline, replacing (and
// revoking) one the key had.
func (c *Client) keep(key string, tok *oauth2.Token, deadline time.Time) error {
	tokens := &grantTokens{oauth: &c.oauth, ctx: c.tokenContext(context.Background()), tok: tok}
	hc := &http.Client{Transport: &oauth2.Transport{Source: tokens, Base: c.http.Transport}}
	svc, err := drivev3.NewService(context.Background(),
		option.WithHTTPClient(hc),
		option.WithEndpoint(c.ep.APIURL),
		// The library's debug log would show requests; keep it silent
		// whatever the environment says.
		option.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err != nil {
		return fmt.Errorf("drive: create the Drive client: %w", err)
	}
	g := &grant{key: key, tokens: tokens, svc: svc}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.revokeQuietly(g)
		return ErrClosed
	}
	old := c.grants[key]
	c.grants[key] = g
	g.timer = time.AfterFunc(time.Until(deadline), func() { c.expireGrant(g) })
	c.mu.Unlock()
	if old != nil {
		old.timer.Stop()
		c.revokeQuietly(old)
	}
	return nil
}

// Connected reports whether key holds a grant.
func (c *Client) Connected(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.grants[key] != nil
}

// Disconnect ends key's grant: it is forgotten here and revoked at Google.
// A key without a grant is not an error.
func (c *Client) Disconnect(ctx context.Context, key string) error {
	c.mu.Lock()
	g := c.grants[key]
	delete(c.grants, key)
	c.mu.Unlock()
	if g == nil {
		return nil
	}
	g.timer.Stop()
	return c.revoke(ctx, g.tokens.revocable())
}

// expireGrant ends g at its deadline, unless it was replaced or ended
// before.
func (c *Client) expireGrant(g *grant) {
	c.mu.Lock()
	current := c.grants[g.key] == g
	if current {
		delete(c.grants, g.key)
	}
	c.mu.Unlock()
	if current {
		c.revokeQuietly(g)
	}
}

// drop forgets g, which Google no longer honours, and revokes it in the
// background in case part of it still lives.
func (c *Client) drop(g *grant) {
	c.mu.Lock()
	current := c.grants[g.key] == g
	if current {
		delete(c.grants, g.key)
	}
	c.mu.Unlock()
	if current {
		g.timer.Stop()
		go c.revokeQuietly(g)
	}
}

// revokeQuietly revokes g where no caller waits for the outcome; a failure
// is logged, without the token.
func (c *Client) revokeQuietly(g *grant) {
	ctx, cancel := context.WithTimeout(context.Background(), tokenTimeout)
	defer cancel()
	if err := c.revoke(ctx, g.tokens.revocable()); err != nil {
		c.log.Warn("revoking a Google Drive grant failed; it ends at Google when its tokens expire", "key", g.key, "err", err)
	}
}

// revoke ends the grant token belongs to at Google. The token goes in the
// form body, never in the URL, where proxies and logs would keep it.
func (c *Client) revoke(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	body := url.Values{"token": {token}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ep.RevokeURL, strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("drive: revoke: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.tokenHTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%w: revoke: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil
	}
	var e struct {
		Error string `json:"error"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e)
	if resp.StatusCode == http.StatusBadRequest && e.Error == "invalid_token" {
		return nil // already ended: what revoking was for
	}
	return fmt.Errorf("%w: revoke: HTTP %d %s", ErrUnavailable, resp.StatusCode, e.Error)
}

// grantOf returns key's grant, or ErrNotConnected.
func (c *Client) grantOf(key string) (*grant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.grants[key]; g != nil {
		return g, nil
	}
	return nil, ErrNotConnected
}
