//go:build hostile

package hostile

import (
	"bufio"
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A client that stops reading is held to little kernel memory on both
// ends: it advertises a small segment size, so the server's send buffer
// starts small (on loopback it would start at megabytes, the 3.8 MB a
// socket of the hostile run), and keeps a small receive buffer. The
// attacks need the server blocked writing, not gigabytes of the shared
// machine's memory.
const (
	stalledMSS     = 536
	stalledRcvBuf  = 4 << 10
	tcpEstablished = 1
	tcpTimeWait    = 6
	tcpClose       = 7
)

// dialStalled connects from local (any loopback address; nil for the
// default) to addr as a client that will not read.
func dialStalled(local net.IP, addr string) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) {
			if err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, stalledMSS); err != nil {
				return
			}
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, stalledRcvBuf)
		})
		return err
	}}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// tcpSocket is a row of /proc/net/tcp: one end of a connection.
type tcpSocket struct {
	local, remote netip.AddrPort
	state         int
	txQueue       int // bytes written and not yet acknowledged by the peer
}

// tcpSockets lists this network namespace's TCP sockets.
func tcpSockets(t *testing.T) []tcpSocket {
	t.Helper()
	var out []tcpSocket
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 5 {
				continue
			}
			local, err1 := procAddr(fields[1])
			remote, err2 := procAddr(fields[2])
			state, err3 := strconv.ParseInt(fields[3], 16, 32)
			tx, _, _ := strings.Cut(fields[4], ":")
			txq, err4 := strconv.ParseInt(tx, 16, 64)
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
				t.Fatalf("%s: unreadable row %q", file, sc.Text())
			}
			out = append(out, tcpSocket{local: local, remote: remote, state: int(state), txQueue: int(txq)})
		}
		f.Close()
	}
	return out
}

// procAddr reads an address of /proc/net/tcp: hex of the address in 32-bit
// words in host order (little-endian here), a colon, the hex port.
func procAddr(s string) (netip.AddrPort, error) {
	h, p, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(h)
	if err != nil {
		return netip.AddrPort{}, err
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, ok := netip.AddrFromSlice(raw)
	if !ok {
		return netip.AddrPort{}, strconv.ErrSyntax
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}

// serverEnds are the server's ends of connections from the clients keep
// selects, that hold anything: every state but TIME_WAIT and CLOSE.
func (s *server) serverEnds(t *testing.T, keep func(remote netip.AddrPort) bool) []tcpSocket {
	t.Helper()
	port := netip.MustParseAddrPort(s.addr).Port()
	var out []tcpSocket
	for _, sk := range tcpSockets(t) {
		if sk.local.Port() == port && sk.remote.Port() != 0 && keep(sk.remote) && sk.state != tcpTimeWait && sk.state != tcpClose {
			out = append(out, sk)
		}
	}
	return out
}

// waitServerEnds waits until the server holds no connection keep selects,
// until within after since, and says how long after since it was; or
// fails.
func (s *server) waitServerEnds(t *testing.T, since time.Time, within time.Duration, keep func(netip.AddrPort) bool) time.Duration {
	t.Helper()
	start := since
	for {
		left := s.serverEnds(t, keep)
		if len(left) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > within {
			queued := 0
			for _, sk := range left {
				queued += sk.txQueue
			}
			t.Fatalf("after %s the server still holds %d of the connections, with %d KiB it could not send", within, len(left), queued>>10)
		}
		if s.watch != nil {
			s.watch.requireUnder(t, rssBound)
		}
		s.requireAlive(t)
		time.Sleep(50 * time.Millisecond)
	}
}

// waitBlocked waits until n of the server's connections keep selects have
// an answer queued that their clients do not take: the server is blocked
// writing to them.
func (s *server) waitBlocked(t *testing.T, n int, within time.Duration, keep func(netip.AddrPort) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		blocked := 0
		for _, sk := range s.serverEnds(t, keep) {
			if sk.txQueue > 0 {
				blocked++
			}
		}
		if blocked >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d connections had the server blocked writing after %s", blocked, n, within)
		}
		s.requireAlive(t)
		time.Sleep(20 * time.Millisecond)
	}
}
