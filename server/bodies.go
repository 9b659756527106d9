package server

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"
)

// JSON bodies are read whole before they are decoded, up to 20 MiB for a
// text upload: a hundred clients sending such bodies at once would hold
// 2 GB. So the bodies in memory share a budget, bodyBudget; a request
// whose body does not fit waits its turn for up to bodyBudgetWait, then is
// answered 503. (File uploads are spooled to disk and take none of it.)
const (
	bodyBudget     = 256 << 20
	bodyBudgetWait = 10 * time.Second
	// ctxBodyBudget holds the request's share of the budget, given back
	// when the request ends.
	ctxBodyBudget = "docsift.body_budget"
)

// errBodiesBusy answers a request whose body found no room in the budget.
var errBodiesBusy = errorf(http.StatusServiceUnavailable, "the server is reading as many request bodies as it holds at once: send it again in a few seconds")

// bodyShare is what one request holds of the body budget.
type bodyShare struct {
	budget *semaphore.Weighted
	held   int64
}

// budgetBodies gives each request a share of the body budget to take from
// (see reserveBody) and gives back what it took when the request ends.
func (s *Server) budgetBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		share := &bodyShare{budget: s.bodies}
		c.Set(ctxBodyBudget, share)
		defer func() {
			if share.held > 0 {
				share.budget.Release(share.held)
			}
		}()
		return next(c)
	}
}

// reserveBody takes room for a body of up to limit bytes (its length when
// the client sent one) from the request's share of the budget, waiting for
// it as long as bodyBudgetWait.
func reserveBody(c echo.Context, limit int64) error {
	share, ok := c.Get(ctxBodyBudget).(*bodyShare)
	if !ok {
		return nil // a handler run outside the server's middleware (tests)
	}
	n := limit
	if cl := c.Request().ContentLength; cl >= 0 && cl < n {
		n = cl // MaxBytesReader still holds the body to limit
	}
	n = max(n, 1)
	ctx, cancel := context.WithTimeout(c.Request().Context(), bodyBudgetWait)
	defer cancel()
	if err := share.budget.Acquire(ctx, n); err != nil {
		return errBodiesBusy
	}
	share.held += n
	return nil
}
