package service

import (
	"crypto/tls"
	"net/http"
	"testing"
)

// TestTLSServesHTTP2: with TLS, a client that offers h2 gets HTTP/2.
func TestTLSServesHTTP2(t *testing.T) {
	cert, key := writeCert(t, t.TempDir(), "h2")
	s := start(t, Options{Handler: hello(), TLSCert: cert, TLSKey: key})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	resp, body := get(t, c, s.url+"/mcp")
	if resp.StatusCode != 200 || body != "hello" || resp.ProtoMajor != 2 {
		t.Errorf("%s %d %q, want HTTP/2 200 hello", resp.Proto, resp.StatusCode, body)
	}
}
