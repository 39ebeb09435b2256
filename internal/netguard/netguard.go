// Package netguard keeps an HTTP client off the addresses that are not
// public (loopback, private, link-local, and the rest), checked when each
// connection is made: a URL an untrusted party names (a registry entry's
// bundle URL) cannot make the fetcher reach a service on the machine or
// its network (a server-side request forgery), not even through a name
// that resolves to a public address when it is checked and to a private
// one when it is dialed (DNS rebinding), nor through a redirect.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/loopback"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Scope says which addresses a guarded client may connect to.
type Scope uint8

const (
	// Public allows public unicast addresses only (the zero value).
	Public Scope = iota
	// Loopback allows public addresses and loopback ones (127.0.0.0/8,
	// ::1): a service on the same machine, as a test or a local mirror
	// runs one.
	Loopback
	// Private allows public, loopback and private addresses (RFC 1918,
	// fc00::/7, and the shared 100.64.0.0/10 of carrier-grade NAT and
	// overlay networks), never link-local ones (a cloud's metadata service
	// at 169.254.169.254) nor the other special-purpose ones: what a
	// server on a private network may name ([ScopeOf]).
	Private
	// Any allows every address: no guard.
	Any
)

// The scopes are ordered, each allowing what the one before it allows and
// more: the wider of two is their max.

// scopeNames are the names of the scopes, in their order.
var scopeNames = [...]string{Public: "public", Loopback: "loopback", Private: "private", Any: "any"}

// String is the scope's name: public, loopback, private or any.
func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return fmt.Sprintf("Scope(%d)", uint8(s))
}

// ParseScope is the scope of a name String returns.
func ParseScope(name string) (Scope, error) {
	for i, n := range scopeNames {
		if n == name {
			return Scope(i), nil
		}
	}
	return Public, fmt.Errorf("unknown address scope %s (want public, loopback, private or any)", textsafe.RawQuote(name))
}

// ErrRefused: a connection would have gone to an address the scope
// refuses.
var ErrRefused = errors.New("address not public: refused")

// Allows reports whether s allows a connection to a.
func (s Scope) Allows(a netip.Addr) bool {
	switch s {
	case Any:
		return true
	case Loopback:
		if a.Unmap().IsLoopback() {
			return true
		}
	case Private:
		if a.Unmap().IsLoopback() || isPrivate(a) {
			return true
		}
	}
	return IsPublic(a)
}

// isPrivate reports whether a is private (RFC 1918, fc00::/7) or shared
// (100.64.0.0/10), an IPv4 one embedded in IPv6 (IPv4-mapped) included.
func isPrivate(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	shared := netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, 0, 0}), 10) // RFC 6598; built here, not at start
	return a.IsPrivate() || shared.Contains(a)
}

// IsLoopbackHost reports whether host, a URL's host name without its port
// (url.URL.Hostname), names this machine's loopback interface: the one
// loopback rule of mcpsign (internal/loopback.IsHost: "localhost" in any
// case, 127.0.0.0/8, ::1). Plain http:// is allowed only to such a host,
// and a server on one may send mcpsign to loopback addresses (ScopeOf).
// It resolves nothing: another name is not loopback, whatever it
// resolves to.
func IsLoopbackHost(host string) bool { return loopback.IsHost(host) }

// ScopeOf is the scope of the fetches that a server at host (a URL's
// Hostname) may direct mcpsign to, by URLs it names (the OAuth metadata
// and endpoints of a 401, the bundle URL it advertises): Loopback for a
// loopback host (IsLoopbackHost); Private for a private or shared IP
// address (a server on a private network, whose neighbours it can reach
// itself); else Public, so that a server on a public address cannot make
// mcpsign reach the user's machine or network. A name is judged as a name,
// not by what it resolves to.
func ScopeOf(host string) Scope {
	if IsLoopbackHost(host) {
		return Loopback
	}
	if a, err := netip.ParseAddr(host); err == nil && isPrivate(a) {
		return Private
	}
	return Public
}

// check returns nil when s allows a, else an error wrapping ErrRefused
// that says what a is.
func (s Scope) check(a netip.Addr) error {
	if s.Allows(a) {
		return nil
	}
	return fmt.Errorf("%w: %s is %s", ErrRefused, a, kind(a))
}

// kind names the class of a non-public address, for messages.
func kind(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case isPrivate(a):
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	}
	return "not a public unicast address"
}

// special are the prefixes of the IANA special-purpose registries (RFC
// 6890 and its updates) that IsPublic refuses beyond what netip's
// predicates tell: shared, documentation, benchmarking, reserved; for
// IPv6, what lies inside 2000::/3 but is not globally reachable.
var special = lazy.New(specialPrefixes)

func specialPrefixes() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"2001::/23", "2001:db8::/32", "3fff::/20",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}

// IsPublic reports whether a is a public unicast address: not loopback,
// private (RFC 1918, fc00::/7), link-local, unspecified, multicast,
// shared (100.64.0.0/10), documentation, benchmarking or reserved, and,
// for IPv6, inside the global unicast space 2000::/3. An address that
// embeds an IPv4 one (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16)
// is public only when that one is.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return false
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && [8]byte(b[4:12]) == [8]byte{}:
			return IsPublic(netip.AddrFrom4([4]byte(b[12:16]))) // NAT64, well-known prefix
		case b[0] == 0x20 && b[1] == 0x02:
			return IsPublic(netip.AddrFrom4([4]byte(b[2:6]))) // 6to4
		case b[0]&0xe0 != 0x20:
			return false // outside 2000::/3
		}
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range special.Get() {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Transport returns a round tripper made from clones of base (nil:
// http.DefaultTransport) whose connections go only to the addresses s
// allows. A direct connection's address is checked by the dialer's
// Control function, after the name is resolved and before anything is
// sent; a base with a dialer of its own has the connection's remote
// address checked before it is used. Through a proxy (base.Proxy), the
// proxy's address is the operator's and is not checked; the request's
// host is, as it resolves here when the request is made. Whether a
// request goes through a proxy is decided for each request, by base.Proxy,
// and only a request that does is sent by the clone that dials proxies
// unchecked: a direct request to the address of a proxy that earlier
// requests used is checked like any other. With s == Any, base is returned
// as it is. http.DefaultTransport's dialer is replaced by one with the
// same timeouts and the Control check. A base that is not an
// *http.Transport cannot be guarded: an error wrapping ErrRefused.
func Transport(base http.RoundTripper, s Scope) (http.RoundTripper, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	if s == Any {
		return base, nil
	}
	bt, ok := base.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%w: the HTTP client's transport (%T) is not an *http.Transport, whose connections could be checked", ErrRefused, base)
	}
	if bt.Dial != nil || bt.DialTLS != nil {
		return nil, fmt.Errorf("%w: the HTTP client's transport dials with the deprecated Dial or DialTLS, which cannot be guarded", ErrRefused)
	}
	direct := bt.Clone()
	direct.Proxy = nil
	guarded := s.dialer()
	dial := direct.DialContext
	if base == http.DefaultTransport {
		dial = nil // net/http's own dialer, which ours replaces (same timeouts), with the Control check
	}
	direct.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dial != nil {
			return s.checked(dial(ctx, network, addr))
		}
		return guarded.DialContext(ctx, network, addr)
	}
	if tlsDial := direct.DialTLSContext; tlsDial != nil {
		direct.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return s.checked(tlsDial(ctx, network, addr))
		}
	}
	if bt.Proxy == nil {
		return direct, nil
	}
	// proxied sends only the requests that go through a proxy, to the
	// proxy RoundTrip chose for each: it dials proxies and nothing else.
	proxied := bt.Clone()
	proxied.Proxy = func(req *http.Request) (*url.URL, error) {
		if u, ok := req.Context().Value(proxyKey{}).(*url.URL); ok {
			return u, nil
		}
		return nil, fmt.Errorf("%w: a request without its proxy reached the proxies' transport", ErrRefused)
	}
	return &router{scope: s, proxy: bt.Proxy, direct: direct, proxied: proxied}, nil
}

// dialer is the dialer that replaces net/http's own in a guarded
// transport: its timeouts (a connection bounded to 30 s, net/http's
// DefaultTransport's), with s's check of every address it connects to.
func (s Scope) dialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: s.control}
}

// proxyKey is the context key under which router hands the proxy it chose
// for a request to the proxies' transport.
type proxyKey struct{}

// router sends each request directly, guarded, or through the proxy the
// base transport's Proxy names for it.
type router struct {
	scope           Scope
	proxy           func(*http.Request) (*url.URL, error)
	direct, proxied *http.Transport
}

func (r *router) RoundTrip(req *http.Request) (*http.Response, error) {
	u, err := r.proxy(req)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return r.direct.RoundTrip(req)
	}
	if err := r.scope.resolveCheck(req.Context(), req.URL.Hostname()); err != nil {
		return nil, err
	}
	return r.proxied.RoundTrip(req.WithContext(context.WithValue(req.Context(), proxyKey{}, u)))
}

// CloseIdleConnections closes the idle connections of both transports.
func (r *router) CloseIdleConnections() {
	r.direct.CloseIdleConnections()
	r.proxied.CloseIdleConnections()
}

// control is the dialer's Control function: address is the resolved
// "ip:port" about to be connected to.
func (s Scope) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrRefused, textsafe.RawQuote(address))
	}
	return s.check(ap.Addr())
}

// checked checks the remote address of a connection another dialer made,
// closing it when refused.
func (s Scope) checked(c net.Conn, err error) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	var a netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a = ta.AddrPort().Addr()
	}
	if err := s.check(a); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// resolveCheck checks every address host resolves to (or host itself,
// an IP literal).
func (s Scope) resolveCheck(ctx context.Context, host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		return s.check(a)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := s.check(a); err != nil {
			return fmt.Errorf("%s: %w", host, err)
		}
	}
	return nil
}
