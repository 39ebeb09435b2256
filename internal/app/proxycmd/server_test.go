package proxycmd

import (
	"errors"
	"slices"
	"testing"

	"github.com/mcpsign/mcpsign/proxy"
)

func TestSetServer(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args        []string
		wantCommand []string
		wantURL     string
		wantErr     error
	}{
		"a command":                       {[]string{"node", "server.js"}, []string{"node", "server.js"}, "", nil},
		"a one-word command":              {[]string{"./server"}, []string{"./server"}, "", nil},
		"an https URL":                    {[]string{"https://mcp.example/mcp"}, nil, "https://mcp.example/mcp", nil},
		"an HTTP URL on loopback":         {[]string{"HTTP://127.0.0.1:8080/mcp"}, nil, "HTTP://127.0.0.1:8080/mcp", nil},
		"http to another host":            {[]string{"http://mcp.example/mcp"}, nil, "", proxy.ErrInsecureURL},
		"a URL and more words: a command": {[]string{"https://mcp.example/mcp", "x"}, []string{"https://mcp.example/mcp", "x"}, "", nil},
		"another scheme: a command":       {[]string{"ftp://mcp.example"}, []string{"ftp://mcp.example"}, "", nil},
	} {
		t.Run(name, func(t *testing.T) {
			c := &Config{Command: []string{"old"}, URL: "https://old.example"}
			err := c.SetServer(tc.args)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && (!slices.Equal(c.Command, tc.wantCommand) || c.URL != tc.wantURL) {
				t.Errorf("command %q URL %q, want %q %q", c.Command, c.URL, tc.wantCommand, tc.wantURL)
			}
		})
	}
	if err := (&Config{}).SetServer([]string{"https://[::1"}); err == nil {
		t.Error("a URL that does not parse is accepted")
	}
}

// TestHandOverNone: a test binary has no mcpsign-proxy beside it, so
// nothing is handed over and the configuration is left as it was.
func TestHandOverNone(t *testing.T) {
	t.Parallel()
	c := &Config{Lock: "x.lock"}
	handed, err := HandOver(c, []string{"proxy-verify"}, "--server-advertised")
	if handed || err != nil || c.VerifyCommand != nil || c.VerifyAdvertisedArg != "" {
		t.Errorf("HandOver: %v, %v, %+v", handed, err, c)
	}
}
