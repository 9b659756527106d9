package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store/bolt"
)

// connServer runs the API as `docsift serve` does (its http.Server and
// connection limits, on a real listener) and returns its address and a
// project key.
func connServer(t *testing.T, limits server.ConnLimits) (addr, key, projectID string) {
	t.Helper()
	e := connServerEnv(t, limits)
	return e.addr, e.key, e.projectID
}

// connEnv is a server connServerEnv runs: its address, a project, and its
// store, for tests that set records up underneath the API.
type connEnv struct {
	addr, key, projectID string
	store                *bolt.Store
}

func connServerEnv(t *testing.T, limits server.ConnLimits) *connEnv {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.SetThrowaway()
	p, key, err := st.CreateProject("conns")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	engine := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 1}, log)
	if err := engine.Start(); err != nil {
		t.Fatal(err)
	}
	api := server.New(server.Config{BaseURL: "http://docsift.test", Conns: limits}, st, engine,
		search.New(engine, st, llm.NewExtractive(), nil, log), log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := api.HTTPServer()
	done := make(chan struct{})
	go func() { api.Serve(srv, ln); close(done) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
		engine.Shutdown(context.Background())
		st.Close()
	})
	return &connEnv{addr: ln.Addr().String(), key: key, projectID: p.ID, store: st}
}

// dialFrom opens a connection to addr from the loopback address from, so
// that a test can be two clients on one machine.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c within d, reading and
// dropping whatever it sends before.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return err == nil // io.Copy returns nil at EOF, a timeout error otherwise
}

func healthz(t *testing.T, from, addr string) int {
	t.Helper()
	c := dialFrom(t, from, addr)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("healthz from %s: %v", from, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	addr, _, _ := connServer(t, server.ConnLimits{ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	silent := dialFrom(t, "127.0.0.1", addr)
	if !closedWithin(silent, 5*time.Second) {
		t.Error("a connection that never sent a request stayed open")
	}
	kept := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(kept, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(kept)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	kept.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("an idle keep-alive connection stayed open: %v", err)
	}
}

func TestConnectionsPerClientAreCapped(t *testing.T) {
	addr, _, _ := connServer(t, server.ConnLimits{MaxConnsPerClient: 5})
	for range 5 {
		dialFrom(t, "127.0.0.1", addr) // held open, idle
	}
	if healthz(t, "127.0.0.2", addr) != http.StatusOK {
		t.Error("another client was not served while the first held its share")
	}
	// A connection over the share is answered why, and closed.
	over := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(over, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(over)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a connection over the client's share got no answer: %v", err)
	}
	var body struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body.Error, "too many open connections from this client (at most 5 from one IPv4 address or IPv6 /64 network)") {
		t.Errorf("answer %d %q, want 503 naming the limit", resp.StatusCode, body.Error)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("a connection over the client's share was kept: %v", err)
	}
}

func TestTricklingBodiesAreCut(t *testing.T) {
	limits := server.ConnLimits{BodyStall: 400 * time.Millisecond, BodyRateGrace: 300 * time.Millisecond}
	addr, key, projectID := connServer(t, limits)
	body := fmt.Sprintf(`{"owner_id": %q, "text": %q}`, projectID, strings.Repeat("slow ", 200))
	for _, tc := range []struct {
		name   string
		auth   string
		status int
	}{
		{"with a key", "Authorization: Bearer " + key + "\r\n", http.StatusRequestTimeout},
		// Refused before its body is read; the server must not then wait
		// for the rest of it forever.
		{"without a key", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialFrom(t, "127.0.0.1", addr)
			fmt.Fprintf(c, "POST /upload/text HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tc.auth, len(body))
			answered := make(chan *http.Response, 1)
			go func() {
				resp, _ := http.ReadResponse(bufio.NewReader(c), nil)
				answered <- resp
			}()
			// One byte every 20 ms, 50 bytes/s, until the server answers.
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(10 * time.Second)
			for i := 0; ; i++ {
				select {
				case resp := <-answered:
					if resp == nil || resp.StatusCode != tc.status {
						t.Fatalf("answer %v, want %d", resp, tc.status)
					}
					if tc.status == http.StatusUnauthorized {
						// The trickle goes on; the connection must end.
						rest := time.After(5 * time.Second)
						for {
							select {
							case <-rest:
								t.Fatal("the connection stayed open behind a refused, trickling body")
							case <-tick.C:
								if _, err := c.Write([]byte{body[i%len(body)]}); err != nil {
									return
								}
								i++
							}
						}
					}
					return
				case <-deadline:
					t.Fatal("a trickling body was never cut")
				case <-tick.C:
					c.Write([]byte{body[i%len(body)]})
				}
			}
		})
	}
}

// One host is commonly given a whole IPv6 /64, and can connect from as
// many of its addresses as it likes: its connections count as one
// client's. IPv4 clients are counted by address.
func TestClientIsAnIPv4AddressOrAnIPv6Network(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.7:443":                        "192.0.2.7",
		"[::ffff:192.0.2.7]:443":               "192.0.2.7",
		"[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:1": "2001:db8:1:2::/64",
		"[2001:db8:1:2::1]:2":                  "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:2":                  "2001:db8:1:3::/64",
		"[fe80::1%eth0]:80":                    "fe80::/64",
		"[::1]:80":                             "::/64",
	} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := server.ClientOf(tcp); got != want {
			t.Errorf("client of %s = %q, want %q", addr, got, want)
		}
	}
}
