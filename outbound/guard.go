// Package outbound keeps the connections docsift makes on a tenant's
// behalf out of the operator's own network. A tenant picks the URL (a
// webhook's endpoint); without a guard it could make docsift call the
// services beside it (a database's admin port, a cloud's metadata service)
// and read their answers back.
//
// One Guard decides for every such connection, twice: when the URL is
// given (CheckHost, for a clear refusal at once) and again when each
// connection is made (DialContext, whose dialer checks the address it is
// about to connect to), so that a name that resolves elsewhere by then (DNS
// rebinding) or a redirect gets nowhere a refused address would. Its
// transport uses no proxy from the environment: a proxy would make the
// connection itself, past the check.
//
// What goes through it: webhook deliveries. What does not: the URLs the
// operator configures (Ollama, SearxNG, Google's OAuth and Drive
// endpoints, a cluster's other nodes), which are the operator's choice, not
// a tenant's, and often on the operator's network on purpose. Drive
// imports name files by id on Google's fixed endpoints, not by URL.
package outbound

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Transport tuning.
const (
	// tlsHandshakeTimeout bounds a TLS handshake; the caller's deadline
	// bounds the whole exchange.
	tlsHandshakeTimeout = 10 * time.Second
	// maxResponseHeaderBytes bounds the headers an answer may have: the
	// other end is anyone's, and an answer's headers are read whole.
	maxResponseHeaderBytes = 64 << 10
	// idleConnTimeout is how long a kept connection waits for reuse.
	idleConnTimeout = 90 * time.Second
)

// Resolver looks host names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides which addresses connections may go to. The zero value
// refuses every address in the ranges below and lets the rest through.
type Guard struct {
	// AllowPrivate lets connections go to the operator's own networks:
	// loopback, private (RFC 1918), shared (RFC 6598, carrier-grade NAT),
	// unique-local and site-local addresses. Link-local, cloud metadata,
	// multicast, broadcast, unspecified and reserved addresses stay
	// refused: no receiver lives there.
	AllowPrivate bool
	// Allow are networks connections may go to whatever they are (an
	// operator naming one knows what it holds), cloud metadata included.
	Allow []netip.Prefix
	// Resolver looks host names up; nil is net.DefaultResolver.
	Resolver Resolver
}

// RefusedError is an address the guard refused to connect to. Nothing was
// sent to it: a refused port and an open one look the same.
type RefusedError struct {
	Addr netip.Addr // as looked up or dialled
	What string     // what the address is: "a loopback address"
	// Private says AllowPrivate would let it through.
	Private bool
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is %s", e.Addr, e.What)
}

// A special is a range of addresses no tenant's connection goes to by
// default, with what it is.
type special struct {
	prefix  netip.Prefix
	what    string
	private bool // the operator's own network: AllowPrivate lets it through
}

// Cloud metadata services answer any process on the machine with its
// credentials; they are named before the ranges that hold them.
const metadata = "a cloud metadata service's address"

// specials are checked in order; the first that holds an address says
// what it is. From the IANA special-purpose registries and the clouds'
// metadata endpoints.
var specials = []special{
	{netip.MustParsePrefix("169.254.169.254/32"), metadata, false}, // AWS, GCP, Azure, Oracle, DigitalOcean
	{netip.MustParsePrefix("169.254.170.2/32"), metadata, false},   // AWS ECS task credentials
	{netip.MustParsePrefix("100.100.100.200/32"), metadata, false}, // Alibaba Cloud
	{netip.MustParsePrefix("168.63.129.16/32"), metadata, false},   // Azure's host endpoint (WireServer)
	{netip.MustParsePrefix("fd00:ec2::254/128"), metadata, false},  // AWS over IPv6

	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address (this host's network)", false},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address (RFC 1918)", true},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared address (RFC 6598, carrier-grade NAT)", true},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address", true},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address", false},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address (RFC 1918)", true},
	{netip.MustParsePrefix("192.0.0.0/24"), "an address reserved for protocol assignments", false},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address", false},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address", false},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address (RFC 1918)", true},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address", false},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address", false},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address", false},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address", false},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address", false},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address", false},

	{netip.MustParsePrefix("::/128"), "the unspecified address", false},
	{netip.MustParsePrefix("::1/128"), "a loopback address", true},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address (deprecated)", false},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated address", false},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address", false},
	{netip.MustParsePrefix("100::/64"), "a discard-only address", false},
	{netip.MustParsePrefix("2001::/23"), "an address reserved for protocol assignments (Teredo and others)", false},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address", false},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address", false},
	{netip.MustParsePrefix("5f00::/16"), "a segment-routing address", false},
	{netip.MustParsePrefix("fc00::/7"), "a unique-local address", true},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address", false},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (deprecated)", true},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address", false},
}

// IPv6 prefixes whose addresses carry an IPv4 address that the connection
// ends up at: NAT64's well-known prefix (RFC 6052), where DNS64 puts IPv4
// hosts for IPv6-only networks, and 6to4 (RFC 3056).
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	// globalUnicast is the IPv6 space given out for use on the
	// internet; past the ranges above, the rest is unassigned.
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// Check says whether a connection may go to addr: nil, or a *RefusedError
// saying what addr is. An IPv4 address written as IPv6 (mapped, NAT64 or
// 6to4) is judged as the IPv4 address.
func (g *Guard) Check(addr netip.Addr) error {
	a := addr.WithZone("").Unmap()
	v4, embedded := embeddedIPv4(a)
	for _, p := range g.Allow {
		if p.Contains(a) || (embedded && p.Contains(v4)) {
			return nil
		}
	}
	if embedded {
		a = v4
	}
	what, private := classify(a)
	if what == "" || (private && g.AllowPrivate) {
		return nil
	}
	return &RefusedError{Addr: addr, What: what, Private: private}
}

// classify says what a is, or "" for an address on the internet.
func classify(a netip.Addr) (what string, private bool) {
	for _, s := range specials {
		if s.prefix.Contains(a) {
			return s.what, s.private
		}
	}
	if a.Is6() && !globalUnicast.Contains(a) {
		return "an unassigned IPv6 address", false
	}
	return "", false
}

func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case !a.Is6():
		return netip.Addr{}, false
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// CheckHost looks host (a name or an address) up as a connection would
// and says whether the guard lets connections go to every address it has:
// nil, a *RefusedError for the first it does not, or the lookup's error
// (a *net.DNSError from net's resolver).
func (g *Guard) CheckHost(ctx context.Context, host string) error {
	addrs, err := g.lookup(ctx, "tcp", host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := g.Check(a); err != nil {
			return err
		}
	}
	return nil
}

func (g *Guard) lookup(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	var r Resolver = net.DefaultResolver
	if g.Resolver != nil {
		r = g.Resolver
	}
	ipNetwork := "ip"
	switch network {
	case "tcp4", "udp4":
		ipNetwork = "ip4"
	case "tcp6", "udp6":
		ipNetwork = "ip6"
	}
	addrs, err := r.LookupNetIP(ctx, ipNetwork, host)
	if err == nil && len(addrs) == 0 {
		err = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return addrs, err
}

// DialContext connects to address (host:port) as net.Dialer does, through
// the guard: the host is looked up with the guard's resolver, refused
// addresses are never dialled, and the dialer checks each address again
// as it connects. When every address is refused, the error is a
// *RefusedError (errors.As finds it).
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("outbound: %w", err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("outbound: port %q is not a port", portText)
	}
	addrs, err := g.lookup(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d := g.dialer()
	var refused, failed error
	for _, a := range addrs {
		if err := g.Check(a); err != nil {
			refused = cmpOr(refused, err)
			continue
		}
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		failed = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, cmpOr(failed, refused)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// dialer checks, as it connects, the address it connects to: whatever
// looked the name up, that is where the connection goes.
func (g *Guard) dialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("outbound: cannot check the address %q", address)
			}
			return g.Check(ap.Addr())
		},
	}
}

// Transport returns an HTTP transport whose connections all go through
// g.DialContext, and never through a proxy from the environment (which
// would connect on its behalf, past the check).
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		IdleConnTimeout:        idleConnTimeout,
	}
}

// ParsePrefixes reads networks for Guard.Allow: CIDRs such as
// 10.1.2.0/24 or fd12::/48, or single addresses. An IPv4 network
// written as IPv6 (::ffff:10.0.0.0/104) is read as the IPv4 one.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not a network such as 10.1.2.0/24 or fd12:3456::/48, nor an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
