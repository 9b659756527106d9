package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// Rate limits are token buckets per client: per project for API keys, per
// session for upload pages. A project's backend is a trusted caller, so its
// limit is off unless the operator sets one; a session URL is in an end
// user's hands, so it has one by default.
const (
	DefaultRateLimit        = 0 // requests per second per project; 0: unlimited
	DefaultSessionRateLimit = 5 // requests per second per upload session

	// burstSeconds sizes a bucket: a client may burst this many seconds'
	// worth of requests (a page loading its assets, a batch of uploads).
	burstSeconds = 4
	// idleBucket is how long an unused bucket is kept; pruning happens
	// once there are more than pruneAbove buckets.
	idleBucket = 10 * time.Minute
	pruneAbove = 10000
)

type rateLimiter struct {
	perSecond float64
	what      string // "project", "session": for the error message

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newRateLimiter(perSecond float64, what string) *rateLimiter {
	if perSecond <= 0 {
		return nil
	}
	return &rateLimiter{perSecond: perSecond, what: what, buckets: map[string]*bucket{}}
}

// check takes a token for key, or returns a 429 saying when to retry. A nil
// limiter allows everything.
func (r *rateLimiter) check(c echo.Context, key string) error {
	if r == nil {
		return nil
	}
	now := time.Now()
	r.mu.Lock()
	b := r.buckets[key]
	if b == nil {
		if len(r.buckets) > pruneAbove {
			for k, old := range r.buckets {
				if now.Sub(old.seen) > idleBucket {
					delete(r.buckets, k)
				}
			}
		}
		burst := max(1, int(math.Ceil(r.perSecond*burstSeconds)))
		b = &bucket{lim: rate.NewLimiter(rate.Limit(r.perSecond), burst)}
		r.buckets[key] = b
	}
	b.seen = now
	res := b.lim.ReserveN(now, 1)
	delay := res.DelayFrom(now)
	if delay > 0 {
		res.CancelAt(now) // a refused request does not use up the future
	}
	r.mu.Unlock()
	if delay == 0 {
		return nil
	}
	secs := int(math.Ceil(delay.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return errorf(http.StatusTooManyRequests, "%s", fmt.Sprintf("rate limit exceeded: at most %g requests per second per %s; retry after %d s", r.perSecond, r.what, secs))
}
