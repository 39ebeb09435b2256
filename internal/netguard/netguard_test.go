package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestIsPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		public bool
	}{
		{"93.184.216.34", true},
		{"8.8.8.8", true},
		{"2606:4700::1111", true},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
		{"127.0.0.1", false},
		{"127.8.9.10", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"10.0.0.5", false},
		{"172.16.3.4", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // a cloud's metadata service
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fd00::2", false},
		{"fc00::1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"0.1.2.3", false},
		{"100.64.0.1", false}, // shared (carrier-grade NAT)
		{"192.0.0.8", false},
		{"192.0.2.2", false},
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"ff02::1", false},
		{"64:ff9b::a00:5", false},     // NAT64 of 10.0.0.5
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"2002:a00:5::1", false},      // 6to4 of 10.0.0.5
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2001:db8::1", false},
		{"2001::1", false}, // Teredo
		{"3fff::1", false},
		{"::a00:5", false}, // IPv4-compatible, deprecated
		{"fec0::1", false}, // site-local, deprecated
		{"100::1", false},  // discard
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := IsPublic(a); got != tt.public {
			t.Errorf("IsPublic(%s) = %v, want %v", tt.addr, got, tt.public)
		}
		if Public.Allows(a) != tt.public || !Any.Allows(a) {
			t.Errorf("%s: Public.Allows %v, Any.Allows %v", tt.addr, Public.Allows(a), Any.Allows(a))
		}
		if want := tt.public || a.Unmap().IsLoopback(); Loopback.Allows(a) != want {
			t.Errorf("Loopback.Allows(%s) = %v, want %v", tt.addr, !want, want)
		}
	}
}

// otherAddr is an address of this machine that is not loopback (and, on
// a test machine, not public either), or the test is skipped.
func otherAddr(t *testing.T) netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() && !IsPublic(p.Addr()) {
			return p.Addr()
		}
	}
	t.Skip("no non-loopback, non-public address on this machine to listen on")
	return netip.Addr{}
}

func listen(t *testing.T, a netip.Addr, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		t.Skipf("listen on %s: %v", a, err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }

// TestTransport makes real connections through guarded transports: to
// listeners on loopback and on another address of this machine, by IP and
// by name, through a redirect, through a proxy, with a base's own dialer.
func TestTransport(t *testing.T) {
	t.Parallel()
	loop := listen(t, netip.MustParseAddr("127.0.0.1"), http.HandlerFunc(ok))
	other := otherAddr(t)
	priv := listen(t, other, http.HandlerFunc(ok))
	redirect := listen(t, netip.MustParseAddr("127.0.0.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, priv.URL+"/", http.StatusFound)
	}))
	// The proxy answers every request itself: its target is never dialed.
	proxy := listen(t, netip.MustParseAddr("127.0.0.1"), http.HandlerFunc(ok))
	proxyURL, _ := url.Parse(proxy.URL)
	viaProxy := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	ownDialer := &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	_, port, _ := net.SplitHostPort(loop.Listener.Addr().String())
	byName := "http://localhost:" + port + "/"

	tests := []struct {
		name  string
		base  http.RoundTripper
		scope Scope
		url   string
		fails bool
	}{
		{"loopback, public scope", nil, Public, loop.URL, true},
		{"closed port on loopback, public scope: refused before connecting", nil, Public, "http://127.0.0.1:1/", true},
		{"closed port on loopback, public scope, the default transport", http.DefaultTransport, Public, "http://127.0.0.1:1/", true},
		{"loopback by name, public scope", nil, Public, byName, true},
		{"loopback, loopback scope", nil, Loopback, loop.URL, false},
		{"loopback by name, loopback scope", nil, Loopback, byName, false},
		{"other address, loopback scope", nil, Loopback, priv.URL, true},
		{"other address, any scope", nil, Any, priv.URL, false},
		{"redirect to the other address, loopback scope", nil, Loopback, redirect.URL, true},
		{"redirect to the other address, any scope", nil, Any, redirect.URL, false},
		{"own dialer, loopback, public scope", ownDialer, Public, loop.URL, true},
		{"own dialer, loopback, loopback scope", ownDialer, Loopback, loop.URL, false},
		{"proxy on loopback, public target", viaProxy, Public, "http://93.184.216.34/", false},
		{"proxy on loopback, private target", viaProxy, Public, "http://10.0.0.5/", true},
		{"proxy on loopback, metadata target", viaProxy, Loopback, "http://169.254.169.254/latest/meta-data/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := Transport(tt.base, tt.scope)
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Transport: rt, Timeout: 10 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tt.url, nil)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			switch {
			case tt.fails && !errors.Is(err, ErrRefused):
				t.Fatalf("err = %v, want ErrRefused", err)
			case !tt.fails && (err != nil || resp.StatusCode != http.StatusOK):
				t.Fatalf("err = %v", err)
			}
			if tr, ok := rt.(interface{ CloseIdleConnections() }); ok {
				tr.CloseIdleConnections()
			}
		})
	}
}

// TestTransportProxyAddressDirect: a request sent directly to the address
// of a proxy that earlier requests went through is checked like any other
// (net/http never proxies a loopback host, so with a proxy on loopback the
// proxy's own address is reached directly).
func TestTransportProxyAddressDirect(t *testing.T) {
	t.Parallel()
	proxy := listen(t, netip.MustParseAddr("127.0.0.1"), http.HandlerFunc(ok))
	proxyURL, _ := url.Parse(proxy.URL)
	// As http.ProxyFromEnvironment decides: no proxy for a loopback host.
	base := &http.Transport{Proxy: func(req *http.Request) (*url.URL, error) {
		if a, err := netip.ParseAddr(req.URL.Hostname()); err == nil && a.IsLoopback() {
			return nil, nil
		}
		return proxyURL, nil
	}}
	rt, err := Transport(base, Public)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	get := func(u string) error {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get("http://93.184.216.34/"); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if err := get(proxy.URL + "/"); !errors.Is(err, ErrRefused) {
		t.Fatalf("the proxy's address, directly: err = %v, want ErrRefused", err)
	}
}

// TestTransportUnguardable: a transport whose connections cannot be
// checked is refused, unless every address is allowed.
func TestTransportUnguardable(t *testing.T) {
	t.Parallel()
	type rt struct{ http.RoundTripper }
	tests := []struct {
		name  string
		base  http.RoundTripper
		scope Scope
		fails bool
	}{
		{"not an *http.Transport", rt{}, Public, true},
		{"not an *http.Transport, any scope", rt{}, Any, false},
		{"a DialTLS of its own", &http.Transport{DialTLS: func(string, string) (net.Conn, error) { return nil, nil }}, Loopback, true},
		{"the default", nil, Public, false},
	}
	for _, tt := range tests {
		_, err := Transport(tt.base, tt.scope)
		if tt.fails != errors.Is(err, ErrRefused) || (!tt.fails && err != nil) {
			t.Errorf("%s: err = %v, want failure %v", tt.name, err, tt.fails)
		}
	}
}

// TestIsLoopbackHost: the one loopback rule: the four
// copies it replaces disagreed on "LOCALHOST" (proxy/http.go took it,
// oauth/ and registry/ did not) and on IPv4-mapped loopback.
func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST", true},
		{"LocalHost", true},
		{"localhost.", false},
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"", false},
		{"localhost.example.com", false},
		{"evil-localhost", false},
		{"0.0.0.0", false},
		{"::", false},
		{"10.0.0.1", false},
		{"example.com", false},
		{"[::1]", false}, // a Hostname has no brackets
	} {
		if got := IsLoopbackHost(tt.host); got != tt.want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

// TestScopeOf: what a server may send mcpsign to follows where the server
// is.
func TestScopeOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		host string
		want Scope
	}{
		{"localhost", Loopback},
		{"127.0.0.1", Loopback},
		{"::1", Loopback},
		{"10.1.2.3", Private},
		{"192.168.0.7", Private},
		{"fd00::5", Private},
		{"100.100.1.1", Private},
		{"169.254.169.254", Public},
		{"mcp.example.com", Public},
		{"93.184.216.34", Public},
		{"internal.corp", Public}, // a name is not resolved
	} {
		if got := ScopeOf(tt.host); got != tt.want {
			t.Errorf("ScopeOf(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
	// Private allows what Loopback does, private and shared addresses, and
	// never link-local or the other special ones.
	for _, tt := range []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true}, {"127.0.0.1", true}, {"10.0.0.1", true}, {"172.16.0.1", true},
		{"fd00::1", true}, {"::ffff:192.168.1.1", true}, {"100.64.0.1", true},
		{"169.254.169.254", false}, {"fe80::1", false}, {"0.0.0.0", false}, {"224.0.0.1", false}, {"192.0.2.1", false},
	} {
		if got := Private.Allows(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Private.Allows(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	if !(Public < Loopback && Loopback < Private && Private < Any) {
		t.Error("the scopes are not ordered from the narrowest to the widest")
	}
}

// FuzzIsLoopbackHost: never a panic; a loopback host is one whose scope
// is Loopback, and is "localhost" or an IP address that is loopback.
func FuzzIsLoopbackHost(f *testing.F) {
	for _, s := range []string{"localhost", "LOCALHOST.", "127.0.0.1", "::1", "::ffff:127.0.0.1", "fe80::1%lo", "10.0.0.1", "example.com", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		lb := IsLoopbackHost(host)
		if lb != (ScopeOf(host) == Loopback) {
			t.Fatalf("IsLoopbackHost(%q) = %v, ScopeOf = %v", host, lb, ScopeOf(host))
		}
		if a, err := netip.ParseAddr(host); err == nil {
			if lb != a.Unmap().IsLoopback() {
				t.Fatalf("%q: loopback host %v, address loopback %v", host, lb, a.Unmap().IsLoopback())
			}
		} else if lb && !strings.EqualFold(host, "localhost") {
			t.Fatalf("%q taken as a loopback host", host)
		}
	})
}
