package netguard

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

var errAny = errors.New("any error")

// TestCheckServerURL: the one plain-http rule of every command, the bridge
// and OAuth (docs/REMOTE.md "Plain http"): http only to a
// loopback host, else only when allowed and without credentials; the URL
// in an error never shows its user info or query.
func TestCheckServerURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		raw  string
		rule URLRule
		want error // nil: accepted; errAny: refused otherwise
	}{
		{"https://mcp.example.com/mcp", URLRule{Credentials: true}, nil},
		{"http://127.0.0.1:8080/mcp", URLRule{Credentials: true}, nil},
		{"http://LOCALHOST:8080/mcp", URLRule{Credentials: true}, nil},
		{"http://[::1]:8080/mcp", URLRule{}, nil},
		{"http://mcp.example.com/mcp", URLRule{}, ErrInsecureURL},
		{"http://10.0.0.1/mcp", URLRule{}, ErrInsecureURL},
		{"http://localhost.example.com/mcp", URLRule{}, ErrInsecureURL},
		{"http://mcp.example.com/mcp", URLRule{AllowInsecureHTTP: true}, nil},
		{"http://mcp.example.com/mcp", URLRule{AllowInsecureHTTP: true, Credentials: true}, ErrInsecureCredentials},
		{"http://mcp.example.com/mcp", URLRule{Credentials: true}, ErrInsecureCredentials},
		{"https://mcp.example.com/mcp#frag", URLRule{}, errAny},
		{"ftp://mcp.example.com/mcp", URLRule{AllowInsecureHTTP: true}, errAny},
		{"https:///mcp", URLRule{}, errAny},
	} {
		u, err := url.Parse(tt.raw + "?token=S3CRET")
		if strings.Contains(tt.raw, "#") {
			u, err = url.Parse(strings.Replace(tt.raw, "#", "?token=S3CRET#", 1))
		}
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("us3r", "pw")
		err = CheckServerURL(u, tt.rule)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s %+v: %v, want accepted", tt.raw, tt.rule, err)
		case tt.want == errAny && err == nil, tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
			t.Errorf("%s %+v: %v, want %v", tt.raw, tt.rule, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "S3CRET") || strings.Contains(err.Error(), "us3r")) {
			t.Errorf("%s: the error shows the query or user info: %v", tt.raw, err)
		}
	}
}
