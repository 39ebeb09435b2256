package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransportOwnTLSDialer: a base whose DialTLSContext makes its own TLS
// connections has each connection's remote address checked too (a
// mutation that left that dialer unwrapped lived): a loopback server is
// refused under Public and reached under Loopback and Private.
func TestTransportOwnTLSDialer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(ok))
	defer srv.Close()
	var dials atomic.Int32
	base := &http.Transport{DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // the test server's own certificate
		return d.DialContext(ctx, network, addr)
	}}
	for _, tc := range []struct {
		scope Scope
		fails bool
	}{{Public, true}, {Private, false}, {Loopback, false}} {
		t.Run(tc.scope.String(), func(t *testing.T) {
			rt, err := Transport(base, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			resp, err := (&http.Client{Transport: rt}).Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if tc.fails != errors.Is(err, ErrRefused) || (!tc.fails && err != nil) {
				t.Fatalf("err = %v, want refused: %v", err, tc.fails)
			}
			rt.(*http.Transport).CloseIdleConnections()
		})
	}
	if dials.Load() != 3 {
		t.Errorf("the base's TLS dialer ran %d times, want 3", dials.Load())
	}
}

// TestScopeNames: each scope's name reads back as the scope; a value
// beyond the last is named by its number, and an unknown name is refused.
func TestScopeNames(t *testing.T) {
	t.Parallel()
	for _, s := range []Scope{Public, Loopback, Private, Any} {
		if got, err := ParseScope(s.String()); err != nil || got != s {
			t.Errorf("ParseScope(%q) = %v, %v", s.String(), got, err)
		}
	}
	if got := (Any + 1).String(); got != "Scope(4)" {
		t.Errorf("a scope beyond Any: %q", got)
	}
	if _, err := ParseScope("Scope(4)"); err == nil {
		t.Error("ParseScope of an unknown name: accepted")
	}
}

// TestDialerBounds: the dialer of a guarded transport bounds a connection
// as net/http's default one does (30 s to connect, keep-alive every 30
// s): a zero timeout would leave a connection to a silent address to the
// system's bound, minutes. Mutants that made both zero lived.
func TestDialerBounds(t *testing.T) {
	t.Parallel()
	d := Public.dialer()
	if d.Timeout != 30*time.Second || d.KeepAlive != 30*time.Second || d.Control == nil {
		t.Errorf("dialer: timeout %v, keep-alive %v, control set %v; want 30s, 30s, set", d.Timeout, d.KeepAlive, d.Control != nil)
	}
}
