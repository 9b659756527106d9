package drive

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"
)

const (
	// signInTTL bounds the trip to Google's consent page and back: long
	// enough to pick an account and type a password, short enough that a
	// state lying in a browser history is useless.
	signInTTL = 10 * time.Minute
	// maxSignIns bounds the sign-ins under way, so that a script calling
	// BeginSignIn in a loop cannot fill memory.
	maxSignIns = 10000
)

// SignIn is one trip to Google's consent page, from BeginSignIn to the
// redirect back that claims it by its state. A state is good once.
type SignIn struct {
	// Key is whose grant the sign-in becomes.
	Key string
	// Resume is what the caller needs to carry on when the user is back;
	// the package keeps it in memory and never looks at it.
	Resume string
	// Deadline is when the grant ends.
	Deadline time.Time
	// Expires is when the sign-in stops being accepted: signInTTL after
	// it began, or the deadline if that comes first.
	Expires time.Time

	state    string
	verifier string // PKCE: only its S256 challenge went to Google
}

// State is the value Google sends back with the code. A caller binds it to
// the browser that began the sign-in (a cookie holding it), so that a state
// carried to another browser is refused.
func (s *SignIn) State() string { return s.state }

// BeginSignIn starts a sign-in for key whose grant ends at deadline, and
// returns it with the URL of Google's consent page to send the browser to.
// The URL asks for read-only Drive access, offline (a refresh token, so a
// session longer than an access token's hour keeps working), with a PKCE
// S256 challenge and a fresh random state.
func (c *Client) BeginSignIn(key, resume string, deadline time.Time) (*SignIn, string, error) {
	now := time.Now()
	if !now.Before(deadline) {
		return nil, "", ErrSignInExpired
	}
	s := &SignIn{
		Key: key, Resume: resume, Deadline: deadline,
		Expires:  now.Add(signInTTL),
		state:    randomToken(),
		verifier: oauth2.GenerateVerifier(),
	}
	if deadline.Before(s.Expires) {
		s.Expires = deadline
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, "", ErrClosed
	}
	if len(c.signIns) >= maxSignIns {
		for k, old := range c.signIns {
			if !now.Before(old.Expires) {
				delete(c.signIns, k)
			}
		}
		if len(c.signIns) >= maxSignIns {
			return nil, "", ErrBusy
		}
	}
	c.signIns[stateKey(s.state)] = s
	authURL := c.oauth.AuthCodeURL(s.state,
		oauth2.AccessTypeOffline,
		// Google returns a refresh token only on consent, not on a silent
		// re-approval: ask every time, so every grant can be refreshed.
		oauth2.SetAuthURLParam("prompt", "consent"),
		oauth2.S256ChallengeOption(s.verifier),
	)
	return s, authURL, nil
}

// ClaimSignIn takes the sign-in of state out of the table, whatever comes
// next: a state is used once, even when the sign-in then fails.
func (c *Client) ClaimSignIn(state string) (*SignIn, error) {
	if state == "" {
		return nil, ErrUnknownSignIn
	}
	k := stateKey(state)
	c.mu.Lock()
	s := c.signIns[k]
	delete(c.signIns, k)
	c.mu.Unlock()
	switch {
	case s == nil:
		return nil, ErrUnknownSignIn
	case !time.Now().Before(s.Expires):
		return nil, ErrSignInExpired
	}
	return s, nil
}

// FinishSignIn exchanges the code Google sent back, with the sign-in's
// PKCE verifier, and keeps the grant under the sign-in's key until its
// deadline. A grant the key already had is replaced and revoked.
func (c *Client) FinishSignIn(ctx context.Context, s *SignIn, code string) error {
	if code == "" {
		return fmt.Errorf("%w: Google sent no code", ErrSignInFailed)
	}
	tok, err := c.oauth.Exchange(c.tokenContext(ctx), code, oauth2.VerifierOption(s.verifier))
	if err != nil {
		// A RetrieveError quotes the token endpoint's answer; keep its
		// error code only.
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
			return fmt.Errorf("%w: %w: the token endpoint answered %q", ErrSignInFailed, ErrClientRejected, re.ErrorCode)
		}
		if errors.As(err, &re) {
			return fmt.Errorf("%w: the token endpoint answered %q", ErrSignInFailed, re.ErrorCode)
		}
		return fmt.Errorf("%w: %w", ErrSignInFailed, err)
	}
	return c.keep(s.Key, tok, s.Deadline)
}

// randomToken returns 256 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics if the OS has no entropy)
	return base64.RawURLEncoding.EncodeToString(b)
}

// stateKey is what the table files a state under: its hash, like every
// other secret docsift keeps.
func stateKey(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}
