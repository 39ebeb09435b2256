package proxy

import (
	"errors"
	"net/http"
	"testing"

	"github.com/mcpsign/mcpsign/internal/netguard"
)

// TestHTTPUpstreamURL: an HTTP upstream's URL is checked when it is made:
// plain http:// only to a loopback host unless allowed, and never with
// credentials (a header) to another host, allowed or not
// (docs/PROXY.md, "Remote servers").
func TestHTTPUpstreamURL(t *testing.T) {
	t.Parallel()
	auth := http.Header{"Authorization": {"Bearer secret"}}
	for _, tc := range []struct {
		name string
		url  string
		o    HTTPOptions
		want error
	}{
		{"https with a header", "https://mcp.example.com/mcp", HTTPOptions{Header: auth}, nil},
		{"plain http, not allowed", "http://mcp.example.com/mcp", HTTPOptions{}, netguard.ErrInsecureURL},
		{"plain http, allowed, no header", "http://mcp.example.com/mcp", HTTPOptions{AllowInsecureHTTP: true}, nil},
		{"plain http, allowed, an empty header", "http://mcp.example.com/mcp", HTTPOptions{AllowInsecureHTTP: true, Header: http.Header{}}, nil},
		{"plain http, allowed, a header", "http://mcp.example.com/mcp", HTTPOptions{AllowInsecureHTTP: true, Header: auth}, netguard.ErrInsecureCredentials},
		{"plain http to loopback with a header", "http://127.0.0.1:8080/mcp", HTTPOptions{Header: auth}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := HTTPUpstream(tc.url, tc.o)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("HTTPUpstream(%s) = %v, want %v", tc.url, err, tc.want)
			}
		})
	}
}
