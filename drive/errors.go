package drive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"google.golang.org/api/googleapi"
)

// Errors callers tell apart. Messages are in the package's voice; callers
// speaking to end users choose their own words.
var (
	// ErrNotConnected: no grant for the key, or Google no longer honours
	// it (the user revoked it, it expired): sign in again.
	ErrNotConnected = errors.New("drive: not signed in to Google Drive")
	// ErrUnknownSignIn: the state Google sent back names no sign-in under
	// way: forged, mistyped, or already used.
	ErrUnknownSignIn = errors.New("drive: unknown or already used sign-in")
	// ErrSignInExpired: the sign-in took longer than it may.
	ErrSignInExpired = errors.New("drive: the sign-in has expired")
	// ErrSignInFailed: Google did not exchange the code for tokens.
	ErrSignInFailed = errors.New("drive: the sign-in could not be completed")
	// ErrClientRejected: Google does not take this server's OAuth client
	// id and secret; no sign-in can work until the operator fixes them.
	ErrClientRejected = errors.New("drive: Google refused the OAuth client's id or secret")
	// ErrBusy: too many sign-ins are under way at once.
	ErrBusy = errors.New("drive: too many sign-ins under way")
	// ErrClosed: the client is shutting down.
	ErrClosed = errors.New("drive: the client is closed")
	// ErrNotFound: no such file, or not visible to the user.
	ErrNotFound = errors.New("drive: file not found")
	// ErrBadID: a file or folder id that cannot be one.
	ErrBadID = errors.New("drive: not a Drive file id")
	// ErrRateLimited: Google kept answering "rate limit exceeded" after
	// the client backed off and retried.
	ErrRateLimited = errors.New("drive: Google Drive's rate limit was exceeded")
	// ErrNotImportable: a folder, or a Google format with no export the
	// client fetches (Forms, Drawings, Sites, shortcuts).
	ErrNotImportable = errors.New("drive: the item has no content to import")
	// ErrExportTooLarge: Google refuses to export a document this large
	// (its limit, not the caller's).
	ErrExportTooLarge = errors.New("drive: Google Drive cannot export a document this large")
	// ErrRefused: Google would not give the file (the owner disabled
	// downloads, the file is flagged as abusive, an export it cannot
	// make, …).
	ErrRefused = errors.New("drive: Google Drive refused to give the file")
	// ErrUnavailable: Google did not answer, or answered with a server
	// error.
	ErrUnavailable = errors.New("drive: Google Drive is unavailable")
)

// TooLargeError is a file over the caller's limit. Size is what Drive
// reports, or -1 when the file was stopped while downloading (exports have
// no size until made).
type TooLargeError struct {
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("drive: the file is over the limit of %d bytes", e.Limit)
	}
	return fmt.Sprintf("drive: the file is %d bytes, over the limit of %d", e.Size, e.Limit)
}

// maxRateLimitRetries is how often a rate-limited call is retried, with
// waits of RetryBase, twice that and four times that: long enough for
// Google's per-user quota to refill, short enough for the request the user
// is waiting on.
const maxRateLimitRetries = 3

// rateLimitReasons are the reasons of Google's 403 "slow down" answers.
var rateLimitReasons = []string{"rateLimitExceeded", "userRateLimitExceeded", "dailyLimitExceeded"}

// refusedReasons are 403 reasons that say Google will not give this file.
var refusedReasons = []string{"fileNotDownloadable", "cannotDownloadFile", "cannotDownloadAbusiveFile",
	"cannotExportFile", "insufficientFilePermissions", "fileNotExportable", "appNotAuthorizedToFile"}

// call runs op against the grant's Drive, refreshing the access token once
// when Drive says it is no longer valid, and backing off when Drive says to
// slow down.
func (c *Client) call(ctx context.Context, g *grant, op func(context.Context) error) error {
	refreshed := false
	retries := 0
	for {
		err := op(ctx)
		if err == nil {
			return nil
		}
		switch {
		case apiStatus(err) == http.StatusUnauthorized && !refreshed:
			// The token looked valid here but not to Google (clock skew,
			// revoked access token): one refresh, then one more try.
			refreshed = true
			g.tokens.expire()
			continue
		case isRateLimited(err) && retries < maxRateLimitRetries:
			if err := c.backOff(ctx, retries); err != nil {
				return err
			}
			retries++
			continue
		}
		err = classify(err)
		if errors.Is(err, ErrNotConnected) {
			// Google refuses this grant: drop it so the user is asked to
			// sign in again, and end it at Google in case it still lives.
			c.drop(g)
		}
		return err
	}
}

// backOff waits before retry n (0-based): retryBase·2ⁿ plus up to a
// quarter more, so that many clients refused at once do not return at once.
func (c *Client) backOff(ctx context.Context, n int) error {
	d := c.retryBase << n
	d += time.Duration(rand.Int64N(int64(d/4) + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func apiStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

func apiReason(err error) string {
	var ge *googleapi.Error
	if errors.As(err, &ge) && len(ge.Errors) > 0 {
		return ge.Errors[0].Reason
	}
	return ""
}

func isRateLimited(err error) bool {
	switch apiStatus(err) {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
		return slices.Contains(rateLimitReasons, apiReason(err))
	}
	return false
}

// classify turns what the Drive client returned into the package's
// errors. Google's messages are not passed on: they are in Google's words
// and may quote the request.
func classify(err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, ErrNotConnected), errors.Is(err, ErrUnavailable):
		return err // from the token source, already classified
	case isRateLimited(err):
		return ErrRateLimited
	}
	status, reason := apiStatus(err), apiReason(err)
	switch {
	case status == 0:
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	case status == http.StatusUnauthorized:
		return ErrNotConnected
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusForbidden && reason == "exportSizeLimitExceeded":
		return ErrExportTooLarge
	case status == http.StatusForbidden && slices.Contains(refusedReasons, reason),
		status == http.StatusBadRequest:
		// A 400 is a request Google will not serve for this file (an
		// export it cannot make): retrying will not help.
		return fmt.Errorf("%w (HTTP %d %s)", ErrRefused, status, reason)
	case status == http.StatusForbidden && reason == "insufficientPermissions":
		return ErrNotConnected // the grant lacks the scope: a new sign-in asks for it
	case status >= 500:
		return fmt.Errorf("%w: HTTP %d", ErrUnavailable, status)
	}
	return fmt.Errorf("%w: unexpected answer HTTP %d %s", ErrUnavailable, status, reason)
}
