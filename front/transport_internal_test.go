package front

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestStreamTrip: a GET stream on a connection of its own, over http and
// https, reads the server's events as they come, and its connection ends
// when the body is closed or the request's context ends (the server's
// handler sees its request end).
func TestStreamTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(http.Handler) *httptest.Server
	}{
		{"http", httptest.NewServer},
		{"https", httptest.NewTLSServer},
	} {
		for _, end := range []string{"close", "cancel"} {
			t.Run(tc.name+" "+end, func(t *testing.T) {
				gone := make(chan struct{})
				srv := tc.start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method != http.MethodGet || r.Header.Get("Mcp-Session-Id") != "s1" {
						http.Error(w, "bad", http.StatusBadRequest)
						return
					}
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"))
					w.(http.Flusher).Flush()
					<-r.Context().Done()
					close(gone)
				}))
				defer srv.Close()
				base := http.DefaultTransport.(*http.Transport).Clone()
				if tc.name == "https" {
					base.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
				}
				ut := newUpstreamTransport(base)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Mcp-Session-Id", "s1")
				resp, err := (&http.Client{Transport: ut}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if _, own := resp.Body.(*streamBody); !own || resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, body %T: want 200 on a connection of its own", resp.StatusCode, resp.Body)
				}
				br := bufio.NewReader(resp.Body)
				for _, want := range []string{"event: message", "data: {", ""} {
					line, err := br.ReadString('\n')
					if err != nil || !strings.HasPrefix(strings.TrimSpace(line), want) {
						t.Fatalf("read %q %v, want %q", line, err, want)
					}
				}
				if end == "close" {
					resp.Body.Close()
				} else {
					cancel()
					if _, err := br.ReadString('\n'); err == nil {
						t.Error("the stream was still read after its context ended")
					}
					resp.Body.Close()
				}
				select {
				case <-gone:
				case <-time.After(5 * time.Second):
					t.Fatal("the server's request never ended")
				}
			})
		}
	}
}

// TestStreamTripThroughProxy: a GET stream the transport's settings send
// through an HTTP proxy is left to net/http's transport, which speaks to
// the proxy.
func TestStreamTripThroughProxy(t *testing.T) {
	proxied := make(chan string, 1)
	proxySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied <- r.URL.String() // an absolute URI: the request came as to a proxy
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}))
	defer proxySrv.Close()
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse(proxySrv.URL) }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream.invalid/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: newUpstreamTransport(base)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, own := resp.Body.(*streamBody); own {
		t.Error("a GET through a proxy went on a connection of its own")
	}
	select {
	case u := <-proxied:
		if u != "http://upstream.invalid/mcp" {
			t.Errorf("the proxy was asked for %q", u)
		}
	default:
		t.Error("the proxy never saw the GET")
	}
}

// TestStreamTripTLSHandshakeBound: a GET stream on a connection of its own
// is bound by the transport's TLSHandshakeTimeout, as net/http bounds its
// own connections: a server that accepts and never answers the handshake
// fails the GET in that time, not at the end of the session's context.
func TestStreamTripTLSHandshakeBound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the listener closes
		}
	}()
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.Proxy = nil
	base.TLSHandshakeTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ln.Addr().String()+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := newUpstreamTransport(base).RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a GET to a server that never handshakes succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the GET failed after %v (%v): the handshake was not bound by TLSHandshakeTimeout", d, err)
	}
}
