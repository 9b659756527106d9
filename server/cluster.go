package server

import (
	"bytes"
	"crypto/subtle"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/docsift/docsift/internal/redact"
	"github.com/labstack/echo/v4"
)

// In a cluster (Config.Cluster), each owner's index is held by one node.
// Writes go to the shared store from any node; a query is passed to the
// node holding its owner, which answers it from memory. See
// docs/cluster.md.

// nodeHeader carries the cluster's secret on a request one node passes to
// another: the receiving node serves it itself, never passes it on, and
// does not count it against the project's rate limit a second time. A
// client cannot forge it without the secret, which lives in the database.
const nodeHeader = "X-Docsift-Node"

// servedByHeader names, on a query's response, the node that answered it:
// for operators following a query through the cluster.
const servedByHeader = "X-Docsift-Served-By"

// ctxBody is the context key of a query's body, kept as it is read so that
// it can be passed on whole.
const ctxBody = "docsift.body"

// fromNode reports whether the request was passed on by another node.
func (s *Server) fromNode(c echo.Context) bool {
	n := s.cfg.Cluster
	if n == nil {
		return false
	}
	got := c.Request().Header.Get(nodeHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(n.Secret())) == 1
}

// keepBody records the body of a request as the handler reads it, for
// forward.
func (s *Server) keepBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Cluster == nil {
			return next(c)
		}
		body := c.Request().Body
		buf := &bytes.Buffer{}
		c.Request().Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(body, buf), body}
		c.Set(ctxBody, buf)
		return next(c)
	}
}

// forwardTransport reaches other nodes. Connecting is bounded so that a
// dead holder (still counted live until its heartbeat ages) costs a
// query little; answering is not, as an answer may take its time.
var forwardTransport = &http.Transport{
	DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
	MaxIdleConnsPerHost: 32,
	IdleConnTimeout:     time.Minute,
}

// forward passes a query for owner to the node holding owner's index and
// reports whether it did; the response has then been written. It does not
// when this node holds the owner, when another node passed the request
// here, or when the holder cannot be reached: this node then answers after
// loading the owner's index (from the store, or from its own older
// snapshot caught up from the store, the answers saying what is not found
// yet, as after a restart). That is how a dead holder's owners answer
// before its heartbeat ages out.
func (s *Server) forward(c echo.Context, owner string) bool {
	n := s.cfg.Cluster
	if n == nil || s.fromNode(c) {
		return false
	}
	holder, self := n.Holder(owner)
	if self {
		return false
	}
	target, err := url.Parse(holder.URL)
	buf, _ := c.Get(ctxBody).(*bytes.Buffer)
	if err != nil || buf == nil {
		s.log.Error("cannot pass a query to its owner's node", "node", holder.ID, "url", redact.URL(holder.URL), "err", err)
		return false
	}
	body := buf.Bytes()
	failed := false
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Set(nodeHeader, n.Secret())
			// Both nodes log the request under one id.
			r.Out.Header.Set(echo.HeaderXRequestID, requestID(c))
			r.Out.Body = io.NopCloser(bytes.NewReader(body))
			r.Out.ContentLength = int64(len(body))
		},
		ModifyResponse: func(resp *http.Response) error {
			// This node's response says it already.
			resp.Header.Del(echo.HeaderXRequestID)
			return nil
		},
		Transport: forwardTransport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil {
				s.log.Warn("the node holding an owner did not answer; answering here", "owner", owner, "node", holder.ID, "err", err)
			}
			failed = true
		},
	}
	proxy.ServeHTTP(c.Response(), c.Request())
	return !failed || c.Request().Context().Err() != nil
}

// servedHere marks a query's response as answered by this node.
func (s *Server) servedHere(c echo.Context) {
	if n := s.cfg.Cluster; n != nil {
		c.Response().Header().Set(servedByHeader, n.ID())
	}
}
