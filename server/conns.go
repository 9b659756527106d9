package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
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
	// DefaultMaxConnsPerClient bounds one client's share, so a single
	// client cannot take every slot. A client is an IPv4 address or an
	// IPv6 /64 network: one host is commonly given a whole /64, and would
	// otherwise be as many clients as it likes.
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
	// DefaultWriteStall cuts a connection whose client stopped reading
	// its answer: the longest one write to it may wait. Time for TCP to
	// retransmit a lost packet several times (1, 2, 4, 8 s), not for a
	// client to hold the socket's buffers (megabytes of kernel memory
	// each) for as long as it likes.
	DefaultWriteStall = 30 * time.Second

	// minBodyRate is the slowest average a request body may arrive at,
	// in bytes per second. A 64 MiB upload at this rate still fits (in
	// about 4.5 hours); a body trickling a byte every few seconds does not.
	minBodyRate = 4 << 10
	// writePiece is the most one write to a connection carries, each
	// with its own WriteStall: the stall then measures progress, and a
	// long answer (a streamed query, a subpage) goes on for as long as
	// its client reads at least this much per WriteStall.
	writePiece = 64 << 10
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
	WriteStall        time.Duration
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
	if l.WriteStall <= 0 {
		l.WriteStall = DefaultWriteStall
	}
	return l
}

// HTTPServer returns the http.Server to run the API with: the handler with
// the header and idle timeouts. There is no overall read or write timeout,
// because an upload may take long on a slow link and a streamed answer as
// long as the model writes; request bodies are paced instead (see
// paceBodies), and Serve caps the connections and bounds each write.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.Conns.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.Conns.IdleTimeout,
	}
}

// Serve runs the API on ln, with at most MaxConns connections open and at
// most MaxConnsPerClient from one client, and every write to a connection
// bounded by WriteStall: a client that stops reading is cut, on every
// route, whatever wrote (a handler, or net/http itself).
//
// A connection over the client's share is not queued (it would wait
// behind the very connections that exhaust it): it is answered 503 with
// the reason and closed. A connection over MaxConns takes the place of
// the one that has waited longest on its client: idle between requests,
// not yet sent a request, or blocked writing an answer its client does
// not read. Only when every connection is busy serving is it refused.
func (s *Server) Serve(srv *http.Server, ln net.Listener) error {
	l := &limitedListener{Listener: ln, limits: s.cfg.Conns, conns: map[*trackedConn]struct{}{}, perClient: map[string]int{}}
	next := srv.ConnState
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		if tc, ok := c.(*trackedConn); ok {
			l.mu.Lock()
			tc.state, tc.since = state, time.Now()
			l.mu.Unlock()
		}
		if next != nil {
			next(c, state)
		}
	}
	return srv.Serve(l)
}

type limitedListener struct {
	net.Listener
	limits ConnLimits

	mu        sync.Mutex
	conns     map[*trackedConn]struct{} // the open ones
	perClient map[string]int
	refusing  int // connections being answered 503 (see refuse)
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, l: l, client: clientOf(c.RemoteAddr()), state: http.StateNew, since: time.Now()}
		l.mu.Lock()
		var reason string
		var evicted *trackedConn
		switch {
		case l.perClient[tc.client] >= l.limits.MaxConnsPerClient:
			reason = fmt.Sprintf("too many open connections from this client (at most %d from one IPv4 address or IPv6 /64 network): reuse connections or open fewer", l.limits.MaxConnsPerClient)
		case len(l.conns) >= l.limits.MaxConns:
			if evicted = l.longestWaiting(); evicted != nil {
				l.release(evicted)
			} else {
				reason = fmt.Sprintf("the server has as many open connections as it takes (%d), all of them busy: try again shortly", l.limits.MaxConns)
			}
		}
		if reason == "" {
			l.conns[tc] = struct{}{}
			l.perClient[tc.client]++
		}
		answer := reason != "" && l.refusing < maxRefusing
		if answer {
			l.refusing++
		}
		l.mu.Unlock()
		if evicted != nil {
			evicted.abort()
		}
		switch {
		case answer:
			go l.refuse(c, reason)
		case reason != "":
			c.Close() // a flood: answering each would hold its descriptor
		default:
			return tc, nil
		}
	}
}

// longestWaiting is the open connection that has waited longest on its
// client, or nil when all are busy serving a request. l.mu is held.
func (l *limitedListener) longestWaiting() *trackedConn {
	var victim *trackedConn
	var oldest time.Time
	for c := range l.conns {
		since := c.since
		if c.state != http.StateNew && c.state != http.StateIdle {
			w := c.writing.Load()
			if w == 0 {
				continue // running its handler, or reading its request
			}
			since = time.Unix(0, w)
		}
		if victim == nil || since.Before(oldest) {
			victim, oldest = c, since
		}
	}
	return victim
}

// release gives a connection's slot back, once. l.mu is held.
func (l *limitedListener) release(c *trackedConn) {
	if c.released {
		return
	}
	c.released = true
	delete(l.conns, c)
	if l.perClient[c.client]--; l.perClient[c.client] <= 0 {
		delete(l.perClient, c.client)
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

// clientOf is the client a connection comes from: its IPv4 address, or
// its IPv6 address's /64 network.
func clientOf(addr net.Addr) string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return addr.String()
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	network, err := ip.Prefix(64)
	if err != nil {
		return ip.String()
	}
	return network.String()
}

// trackedConn is an open connection as the listener sees it: its slot,
// what it is doing, and its writes, each bounded by WriteStall.
type trackedConn struct {
	net.Conn
	l      *limitedListener
	client string
	// writing is when the write under way began, in Unix nanoseconds;
	// 0 when none is.
	writing atomic.Int64

	// Guarded by l.mu.
	state    http.ConnState // as net/http last said
	since    time.Time      // when it took that state
	released bool
}

// Write writes p a piece at a time, each within WriteStall: a client that
// reads nothing for that long is cut.
func (c *trackedConn) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		piece := p[:min(len(p), writePiece)]
		start := time.Now()
		// An error means the connection cannot have a deadline; it is
		// then closed, and the write fails anyway.
		_ = c.Conn.SetWriteDeadline(start.Add(c.l.limits.WriteStall))
		c.writing.Store(start.UnixNano())
		m, err := c.Conn.Write(piece)
		c.writing.Store(0)
		n += m
		p = p[m:]
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.resetOnClose()
			}
			return n, err
		}
	}
	return n, nil
}

// resetOnClose makes Close reset the connection: the answer its client
// did not read is dropped at once, instead of the kernel holding it while
// the client's window stays shut.
func (c *trackedConn) resetOnClose() {
	if tcp, ok := c.Conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
}

// abort closes a connection whose place the listener gave to another;
// one blocked writing is reset, as a stalled write is.
func (c *trackedConn) abort() {
	if c.writing.Load() != 0 {
		c.resetOnClose()
	}
	c.Conn.Close()
}

// Close closes the connection and gives its slot back.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.release(c)
	c.l.mu.Unlock()
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
