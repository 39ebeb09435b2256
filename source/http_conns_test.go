package source

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListingConnectionsItsOwn: a listing over Streamable HTTP (every
// protocol version's at once) uses connections of its own and closes them
// when Load returns. On one pool shared by the listings of a process,
// one listing's cancellation could close a connection that another
// listing's request then failed on with "context canceled", its own
// context live (seen under load, about one proxy test run in six); and
// the listing left keep-alive connections to the server open behind it.
func TestListingConnectionsItsOwn(t *testing.T) {
	t.Parallel()
	srv := newSDKServer(3, 0)
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	ts := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(open, c)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		name   string
		client *http.Client
	}{
		{"the default transport", nil},
		{"a client's transport", &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := Load(ctx, Spec{URL: ts.URL + "/mcp"}, Options{HTTPClient: tc.client}); err != nil {
				t.Fatal(err)
			}
			// The server sees a closed connection a moment after the
			// client closed it.
			deadline := time.Now().Add(30 * time.Second) // a hang bound
			for {
				mu.Lock()
				n := len(open)
				mu.Unlock()
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d connections to the server still open after the listing", n)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
