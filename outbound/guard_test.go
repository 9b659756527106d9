package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	strict := &Guard{}
	private := &Guard{AllowPrivate: true}
	listed := &Guard{Allow: mustPrefixes(t, "10.1.2.0/24", "169.254.169.254", "fd12:3456::/32")}
	for _, c := range []struct {
		addr                    string
		strict, private, listed bool // allowed by each guard
		what                    string
	}{
		{"93.184.215.14", true, true, true, ""},
		{"2606:4700::1111", true, true, true, ""},
		{"127.0.0.1", false, true, false, "loopback"},
		{"127.9.9.9", false, true, false, "loopback"},
		{"::1", false, true, false, "loopback"},
		{"10.0.0.1", false, true, false, "private"},
		{"10.1.2.3", false, true, true, "private"},
		{"172.16.0.1", false, true, false, "private"},
		{"172.31.255.255", false, true, false, "private"},
		{"172.32.0.1", true, true, true, ""},
		{"192.168.1.1", false, true, false, "private"},
		{"100.64.0.1", false, true, false, "shared"},
		{"100.100.100.200", false, false, false, "metadata"},
		{"169.254.169.254", false, false, true, "metadata"},
		{"169.254.170.2", false, false, false, "metadata"},
		{"168.63.129.16", false, false, false, "metadata"},
		{"fd00:ec2::254", false, false, false, "metadata"},
		{"169.254.1.1", false, false, false, "link-local"},
		{"fe80::1", false, false, false, "link-local"},
		{"fe80::1%lo", false, false, false, "link-local"},
		{"fc00::1", false, true, false, "unique-local"},
		{"fd12:3456::1", false, true, true, "unique-local"},
		{"0.0.0.0", false, false, false, "unspecified"},
		{"0.1.2.3", false, false, false, "unspecified"},
		{"::", false, false, false, "unspecified"},
		{"224.0.0.1", false, false, false, "multicast"},
		{"ff02::1", false, false, false, "multicast"},
		{"255.255.255.255", false, false, false, "broadcast"},
		{"240.0.0.1", false, false, false, "reserved"},
		{"192.0.2.1", false, false, false, "documentation"},
		{"2001:db8::1", false, false, false, "documentation"},
		{"198.18.0.1", false, false, false, "benchmarking"},
		{"2001::1", false, false, false, "Teredo"},
		{"4000::1", false, false, false, "unassigned"},
		// IPv4 addresses written as IPv6 are judged as IPv4.
		{"::ffff:127.0.0.1", false, true, false, "loopback"},
		{"::ffff:169.254.169.254", false, false, true, "metadata"},
		{"::ffff:10.1.2.3", false, true, true, "private"},
		{"::ffff:93.184.215.14", true, true, true, ""},
		{"64:ff9b::7f00:1", false, true, false, "loopback"},
		{"64:ff9b::a9fe:a9fe", false, false, true, "metadata"},
		{"64:ff9b::5db8:d70e", true, true, true, ""},
		{"2002:7f00:1::1", false, true, false, "loopback"},
		{"2002:a01:203::1", false, true, true, "private"},
		{"2002:5db8:d70e::1", true, true, true, ""},
		{"64:ff9b:1::a00:1", false, false, false, "NAT64"},
		{"::127.0.0.1", false, false, false, "IPv4-compatible"},
	} {
		addr := netip.MustParseAddr(c.addr)
		for _, g := range []struct {
			name    string
			guard   *Guard
			allowed bool
		}{{"default", strict, c.strict}, {"private allowed", private, c.private}, {"listed", listed, c.listed}} {
			err := g.guard.Check(addr)
			if (err == nil) != g.allowed {
				t.Errorf("%s guard, Check(%s) = %v; want allowed %v", g.name, c.addr, err, g.allowed)
			}
		}
		var re *RefusedError
		if err := strict.Check(addr); err != nil && (!errors.As(err, &re) || !strings.Contains(err.Error(), c.what) || !strings.Contains(err.Error(), addr.String())) {
			t.Errorf("Check(%s) = %v; want a refusal naming it and %q", c.addr, err, c.what)
		}
	}
}

func mustPrefixes(t *testing.T, list ...string) []netip.Prefix {
	t.Helper()
	ps, err := ParsePrefixes(list)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestParsePrefixes(t *testing.T) {
	ps, err := ParsePrefixes([]string{"10.1.2.3/24", " 192.168.4.5 ", "", "fd00::/8", "::ffff:172.16.0.0/108"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	if want := "10.1.2.0/24 192.168.4.5/32 fd00::/8 172.16.0.0/12"; strings.Join(got, " ") != want {
		t.Errorf("ParsePrefixes = %v, want %s", got, want)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0", "fe80::1%eth0"} {
		if _, err := ParsePrefixes([]string{bad}); err == nil || !strings.Contains(err.Error(), "is not a network") {
			t.Errorf("ParsePrefixes(%q) = %v; want a refusal", bad, err)
		}
	}
}

// An IPv4 address is judged the same however it is written.
func FuzzIPv4Forms(f *testing.F) {
	for _, seed := range [][4]byte{{127, 0, 0, 1}, {169, 254, 169, 254}, {10, 1, 2, 3}, {93, 184, 215, 14}, {100, 100, 100, 200}} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, a, b, c, d byte) {
		v4 := netip.AddrFrom4([4]byte{a, b, c, d})
		var nat64, sixToFour [16]byte
		copy(nat64[:], netip.MustParseAddr("64:ff9b::").AsSlice())
		copy(nat64[12:], v4.AsSlice())
		sixToFour[0], sixToFour[1] = 0x20, 0x02
		copy(sixToFour[2:], v4.AsSlice())
		for _, g := range []*Guard{{}, {AllowPrivate: true}, {Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}} {
			want := g.Check(v4) == nil
			for _, form := range []netip.Addr{netip.AddrFrom16(v4.As16()), netip.AddrFrom16(nat64), netip.AddrFrom16(sixToFour)} {
				if got := g.Check(form) == nil; got != want {
					t.Fatalf("%+v: Check(%s) allows %v, Check(%s) %v", g, v4, want, form, got)
				}
			}
		}
	})
}

// listener is a TCP listener on 127.0.0.1 that counts the connections it
// accepts.
func listener(t *testing.T) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), accepted
}

// resolver answers every name with the address its answer holds at the
// time of the lookup.
type resolver struct{ answer atomic.Pointer[netip.Addr] }

func (r *resolver) set(a string) {
	addr := netip.MustParseAddr(a)
	r.answer.Store(&addr)
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a := r.answer.Load(); a != nil {
		return []netip.Addr{*a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// A name that resolves to a public address when it is checked and to
// loopback when it is connected to (DNS rebinding) gets no connection:
// nothing is dialled.
func TestRebindingRefusedAtConnect(t *testing.T) {
	addr, accepted := listener(t)
	_, port, _ := net.SplitHostPort(addr)
	r := &resolver{}
	g := &Guard{Resolver: r}
	r.set("93.184.215.14")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.CheckHost(ctx, "receiver.example"); err != nil {
		t.Fatalf("CheckHost while the name is public: %v", err)
	}
	r.set("127.0.0.1")
	conn, err := g.DialContext(ctx, "tcp", net.JoinHostPort("receiver.example", port))
	var re *RefusedError
	if err == nil {
		conn.Close()
	}
	if !errors.As(err, &re) || re.Addr.String() != "127.0.0.1" || !re.Private {
		t.Fatalf("dial after the name moved to loopback = %v; want a refusal of 127.0.0.1", err)
	}
	if err := g.CheckHost(ctx, "receiver.example"); !errors.As(err, &re) {
		t.Errorf("CheckHost after the name moved = %v; want a refusal", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback listener accepted %d connections", n)
	}

	// The same listener, allowed by name, is reached.
	allowed := &Guard{Resolver: r, Allow: mustPrefixes(t, "127.0.0.1")}
	conn, err = allowed.DialContext(ctx, "tcp", net.JoinHostPort("receiver.example", port))
	if err != nil {
		t.Fatalf("dial of an allowed address: %v", err)
	}
	conn.Close()
}

// The dialer checks the address it connects to, whoever chose it: the
// check at connect time does not rest on the lookup before it.
func TestDialerChecksAtConnect(t *testing.T) {
	addr, accepted := listener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, target := range []string{addr, strings.Replace(addr, "127.0.0.1", "[::ffff:127.0.0.1]", 1)} {
		_, err := (&Guard{}).dialer().DialContext(ctx, "tcp", target)
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Errorf("dialer to %s = %v; want a refusal", target, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback listener accepted %d connections", n)
	}
}

// Through the transport, a redirect from an allowed address to a refused
// one (were it followed, which a webhook sender does not do) gets no
// connection, and no proxy from the environment stands between.
func TestTransportRefusesRedirects(t *testing.T) {
	// Linux answers on all of 127.0.0.0/8: the internal service listens
	// on 127.0.0.2, which the guard refuses, the front on 127.0.0.1,
	// which it allows.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var fronted atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fronted.Add(1)
		http.Redirect(w, r, "http://"+ln.Addr().String()+"/secret", http.StatusFound)
	})}
	go srv.Serve(front)
	t.Cleanup(func() { srv.Close() })

	g := &Guard{Allow: mustPrefixes(t, "127.0.0.1")}
	tr := g.Transport()
	if tr.Proxy != nil {
		t.Fatal("the transport takes a proxy from the environment")
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + front.Addr().String() + "/")
	if err == nil {
		resp.Body.Close()
	}
	var re *RefusedError
	if !errors.As(err, &re) || re.Addr.String() != "127.0.0.2" {
		t.Errorf("GET through a redirect to 127.0.0.2 = %v; want a refusal of 127.0.0.2", err)
	}
	if fronted.Load() != 1 || accepted.Load() != 0 {
		t.Errorf("the front had %d requests (want 1), the refused address %d connections (want 0)", fronted.Load(), accepted.Load())
	}
}
