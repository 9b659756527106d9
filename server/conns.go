package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Defaults of ConnLimits. Without limits, a client with no key holding idle
// or trickling connections exhausts the process's file descriptors, and
// then nobody is served.
const (
	// DefaultMaxConns bounds the open connections: well under the usual
	// 1,048,576 descriptor limit of a service and the memory of their
	// buffers, well over what one server's clients need.
	DefaultMaxConns = 4096
	// DefaultMaxConnsPerClient bounds one IP address's share, so a single
	// client cannot take every slot.
	DefaultMaxConnsPerClient = 256
	// DefaultReadHeaderTimeout bounds the wait for a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection with no request.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultBodyStall ends a request whose body stops arriving.
	DefaultBodyStall = 30 * time.Second
	// DefaultBodyRateGrace is how long a body may arrive slower than
	// minBodyRate before the request is ended: room for a slow start.
	DefaultBodyRateGrace = 10 * time.Second

	// minBodyRate is the slowest average a request body may arrive at,
	// in bytes per second. A 64 MiB upload at this rate still fits (in
	// about 4.5 hours); a body trickling a byte every few seconds does not.
	minBodyRate = 4 << 10
)

// ConnLimits bound what one connection and one client may hold. The zero
// value of each field takes its default.
type ConnLimits struct {
	MaxConns          int
	MaxConnsPerClient int
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	BodyStall         time.Duration
	BodyRateGrace     time.Duration
}

func (l ConnLimits) withDefaults() ConnLimits {
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.BodyStall <= 0 {
		l.BodyStall = DefaultBodyStall
	}
	if l.BodyRateGrace <= 0 {
		l.BodyRateGrace = DefaultBodyRateGrace
	}
	return l
}

// HTTPServer returns the http.Server to run the API with: the handler with
// the header and idle timeouts. There is no overall read or write timeout,
// because an upload may take long on a slow link and a streamed answer as
// long as the model writes; request bodies are paced instead (see
// paceBodies), and ServeLimited caps the connections.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.Conns.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.Conns.IdleTimeout,
	}
}

// Serve runs the API on ln, with at most MaxConns connections open and at
// most MaxConnsPerClient from one IP address. A connection over either
// limit is not queued (it would wait behind the very connections that
// exhaust the limit): it is answered 503 with the reason and closed.
func (s *Server) Serve(srv *http.Server, ln net.Listener) error {
	return srv.Serve(&limitedListener{Listener: ln, limits: s.cfg.Conns, perClient: map[string]int{}})
}

type limitedListener struct {
	net.Listener
	limits ConnLimits

	mu        sync.Mutex
	open      int
	perClient map[string]int
	refusing  int // connections being answered 503 (see refuse)
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientOf(c.RemoteAddr())
		l.mu.Lock()
		var reason string
		switch {
		case l.perClient[client] >= l.limits.MaxConnsPerClient:
			reason = fmt.Sprintf("too many open connections from this address (at most %d): reuse connections or open fewer", l.limits.MaxConnsPerClient)
		case l.open >= l.limits.MaxConns:
			reason = fmt.Sprintf("the server has as many open connections as it takes (%d): try again shortly", l.limits.MaxConns)
		default:
			l.open++
			l.perClient[client]++
		}
		answer := reason != "" && l.refusing < maxRefusing
		if answer {
			l.refusing++
		}
		l.mu.Unlock()
		switch {
		case answer:
			go l.refuse(c, reason)
		case reason != "":
			c.Close() // a flood: answering each would hold its descriptor
		default:
			return &countedConn{Conn: c, release: func() { l.release(client) }}, nil
		}
	}
}

// maxRefusing bounds the connections over the limits being answered at
// once; past it, they are closed without an answer.
const maxRefusing = 64

// refuseWait bounds how long answering a refused connection may hold it.
const refuseWait = 2 * time.Second

// refuse answers the request on a connection over the limits 503 with the
// reason, as JSON like every other error, and closes it. The answer waits
// for the request (one sent before it would be a stray to the client),
// and what follows is read and dropped until the client closes, or for
// refuseWait in all: closing a socket with unread data resets it, and
// the reset can reach the client before the answer does.
func (l *limitedListener) refuse(c net.Conn, reason string) {
	defer func() {
		c.Close()
		l.mu.Lock()
		l.refusing--
		l.mu.Unlock()
	}()
	body, _ := json.Marshal(errorBody{Error: reason})
	c.SetDeadline(time.Now().Add(refuseWait))
	if _, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, 1<<20))); err != nil {
		return // no request came
	}
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

func (l *limitedListener) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perClient[client]--; l.perClient[client] <= 0 {
		delete(l.perClient, client)
	}
}

// clientOf is the IP address a connection comes from.
func clientOf(addr net.Addr) string {
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// countedConn gives its slot back once, when closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// errBodyTooSlow ends a request whose body stalled or trickled; errTooSlow
// is its answer.
var (
	errBodyTooSlow = errors.New("the request body arrived too slowly")
	errTooSlow     = errorf(http.StatusRequestTimeout, "the request body arrived too slowly (under %d KiB/s, or stalled): the connection was closed", minBodyRate>>10)
)

// paceBodies makes every request body keep arriving: a read that waits
// longer than BodyStall, or an average under minBodyRate once
// BodyRateGrace has passed, ends the request with a 408.
func (s *Server) paceBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body != nil && r.Body != http.NoBody {
			ctl := http.NewResponseController(c.Response().Writer)
			// Also bounds a body the handler never reads (a request
			// refused for its key): the server still reads what is
			// left of it before the next request.
			_ = ctl.SetReadDeadline(time.Now().Add(s.cfg.Conns.BodyStall))
			b := &pacedBody{ReadCloser: r.Body, ctl: ctl, start: time.Now(), limits: s.cfg.Conns}
			r.Body = b
			c.Set(ctxPacedBody, b)
		}
		return next(c)
	}
}

// ctxPacedBody holds the request's pacedBody, however it is wrapped since.
const ctxPacedBody = "docsift.paced_body"

// unreadBody reports whether the request has a body not read to its end.
func unreadBody(c echo.Context) bool {
	b, ok := c.Get(ctxPacedBody).(*pacedBody)
	return ok && !b.ended
}

type pacedBody struct {
	io.ReadCloser
	ctl    *http.ResponseController
	start  time.Time
	limits ConnLimits
	n      int64
	failed bool
	ended  bool // read to its end
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.failed {
		return 0, errBodyTooSlow
	}
	// Errors setting deadlines mean the connection cannot have one (an
	// HTTP/2 stream, a test recorder): the body is then not paced.
	_ = b.ctl.SetReadDeadline(time.Now().Add(b.limits.BodyStall))
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		b.failed = true
		return n, errBodyTooSlow
	case err != nil:
		// The body is over (or broken): lift the deadline, or it would
		// cut the connection's reads while a long answer is written.
		_ = b.ctl.SetReadDeadline(time.Time{})
		b.ended = err == io.EOF
		return n, err
	}
	if took := time.Since(b.start); took > b.limits.BodyRateGrace && float64(b.n) < minBodyRate*took.Seconds() {
		b.failed = true
		return n, errBodyTooSlow
	}
	return n, nil
}
