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

// SharedBuckets keeps token buckets where every node of a cluster draws on
// them: TakeToken takes one token from key's bucket (filling at perSecond,
// holding up to burst) and returns 0, or returns how long until one is
// there. The PostgreSQL store is one.
type SharedBuckets interface {
	TakeToken(key string, perSecond float64, burst int) (time.Duration, error)
}

type rateLimiter struct {
	perSecond float64
	what      string        // "project", "session": for the error message
	shared    SharedBuckets // nil: the buckets below, in this process

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newRateLimiter(perSecond float64, what string, shared SharedBuckets) *rateLimiter {
	if perSecond <= 0 {
		return nil
	}
	return &rateLimiter{perSecond: perSecond, what: what, shared: shared, buckets: map[string]*bucket{}}
}

func (r *rateLimiter) burst() int { return max(1, int(math.Ceil(r.perSecond*burstSeconds))) }

// check takes a token for key, or returns a 429 saying when to retry. A nil
// limiter allows everything.
func (r *rateLimiter) check(c echo.Context, key string) error {
	if r == nil {
		return nil
	}
	if r.shared != nil {
		delay, err := r.shared.TakeToken(r.what+" "+key, r.perSecond, r.burst())
		if err != nil {
			// The request itself needs the same database and will say
			// that it is unreachable; the limit is not the news.
			return nil
		}
		return r.refuse(c, delay)
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
		b = &bucket{lim: rate.NewLimiter(rate.Limit(r.perSecond), r.burst())}
		r.buckets[key] = b
	}
	b.seen = now
	res := b.lim.ReserveN(now, 1)
	delay := res.DelayFrom(now)
	if delay > 0 {
		res.CancelAt(now) // a refused request does not use up the future
	}
	r.mu.Unlock()
	return r.refuse(c, delay)
}

// refuse is the 429 of a request that would have to wait delay; nil when
// it need not wait.
func (r *rateLimiter) refuse(c echo.Context, delay time.Duration) error {
	if delay <= 0 {
		return nil
	}
	secs := int(math.Ceil(delay.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return errorf(http.StatusTooManyRequests, "%s", fmt.Sprintf("rate limit exceeded: at most %g requests per second per %s; retry after %d s", r.perSecond, r.what, secs))
}
