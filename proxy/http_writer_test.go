package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBridgeWriterFailures writes single lines to the bridge's writer (the
// relay's side that POSTs to a Streamable HTTP server) and checks what the
// server received, what Write reported and how the session ended: a line
// that is not sent is never reported as written, and the session's end
// says why (docs/PROXY.md, "Remote servers").
func TestBridgeWriterFailures(t *testing.T) {
	t.Parallel()
	refused := func(t *testing.T) string {
		// A loopback port nobody listens on.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/mcp"
	}
	for _, tc := range []struct {
		name    string
		line    string
		server  string // "accept", "refused", "hang", "error" (500)
		posts   int    // POSTs the server should have received
		written bool   // Write reports the whole line written, no error
		ended   string // "" (the session goes on) or what its end says
	}{
		{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", server: "accept", posts: 1, written: true},
		{name: "blank line", line: " \r\n", server: "accept", written: true},
		{name: "not JSON", line: "{\"jsonrpc\":\"2.0\",\"method\":\n", server: "accept", ended: "not strict JSON-RPC and was not sent"},
		{name: "case-folded member", line: `{"jsonrpc":"2.0","id":1,"method":"tools/list","ID":2}` + "\n", server: "accept", ended: "not strict JSON-RPC and was not sent"},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n", server: "accept", ended: "not strict JSON-RPC and was not sent"},
		{name: "notification, server unreachable", line: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", server: "refused", ended: "cannot connect to"},
		{name: "response, server unreachable", line: `{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n", server: "refused", ended: "cannot connect to"},
		{name: "initialize, server unreachable", line: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n", server: "refused", ended: "cannot connect to"},
		{name: "notification answered 500", line: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n", server: "error", posts: 1, ended: "did not accept a notifications/cancelled notification (500 Internal Server Error)"},
		{name: "response answered 500", line: `{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n", server: "error", posts: 1, ended: "did not accept a response (500 Internal Server Error)"},
		{name: "notification never accepted", line: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", server: "hang", posts: 1, ended: "did not accept a notifications/initialized notification within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			posts := 0
			release := make(chan struct{})
			url := ""
			switch tc.server {
			case "refused":
				url = refused(t)
			default:
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost {
						mu.Lock()
						posts++
						mu.Unlock()
					}
					if tc.server == "hang" {
						select {
						case <-release:
						case <-r.Context().Done():
						}
						return
					}
					if tc.server == "error" {
						w.WriteHeader(http.StatusInternalServerError)
						return
					}
					w.WriteHeader(http.StatusAccepted)
				}))
				t.Cleanup(srv.Close)
				t.Cleanup(func() { close(release) })
				url = srv.URL + "/mcp"
			}
			var stderr strings.Builder
			// The bound only the hanging server must reach; the others
			// answer at once, but a loaded machine under -race may take
			// longer than 200 ms to say so (failed in CI).
			timeout := 10 * time.Second
			if tc.server == "hang" {
				// Long enough for the POST to reach the handler first on a
				// loaded machine under -race (200 ms did not, in CI).
				timeout = time.Second
			}
			u := testHTTPConn(t, url, UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: &stderr, Timeout: timeout, Grace: time.Second})
			defer u.Stop(time.Second)
			werr := u.Send([]byte(tc.line))
			if tc.written {
				if werr != nil {
					t.Fatalf("Send = %v; want nil", werr)
				}
			} else if werr == nil {
				t.Fatalf("Send = nil: a line that was not sent is reported sent")
			}
			mu.Lock()
			got := posts
			mu.Unlock()
			if got != tc.posts {
				t.Errorf("the server received %d POSTs, want %d", got, tc.posts)
			}
			if tc.ended == "" {
				if u.Wait(0) {
					status, _ := u.Exit()
					t.Fatalf("the session ended: %s", status)
				}
				return
			}
			if !u.Wait(time.Second) {
				t.Fatal("the session goes on after a line that was not sent")
			}
			_, nerr := u.Receive()
			var ce *ConnectError
			if !errors.As(nerr, &ce) || errors.Is(nerr, io.EOF) {
				t.Fatalf("the session ended with %v (%T), want a *ConnectError", nerr, nerr)
			}
			if !strings.Contains(nerr.Error(), tc.ended) {
				t.Errorf("the session ended with %q, want it to say %q", nerr, tc.ended)
			}
			if !errors.Is(werr, nerr) {
				t.Errorf("Write returned %v, want the session's end %v", werr, nerr)
			}
		})
	}
}

// TestBridgeGETStreamGivenUp checks that the GET stream, opened again when
// it ends, is given up after getRetries failures in a row with a line on
// stderr (the server's own messages no longer arrive), and that an error
// status is said too, while a server that offers no stream (405, 404, an
// answer that is not a stream) is not a failure.
func TestBridgeGETStreamGivenUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		get    func(w http.ResponseWriter) // the answer to every GET
		notice string                      // what stderr says ("": nothing)
	}{
		{"empty streams", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
		}, "could not be opened, or ended without a message, 5 times in a row"},
		{"broken streams", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("data: {\"jsonrpc\":"))
			panic(http.ErrAbortHandler)
		}, "could not be opened, or ended without a message, 5 times in a row"},
		{"streams broken by the transport", func(w http.ResponseWriter) {
			// A chunk length that is no number: the body's read fails
			// below the event stream.
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
			buf.Flush()
			conn.Close()
		}, "could not be opened, or ended without a message, 5 times in a row"},
		{"server unreachable", nil, "could not be opened, or ended without a message, 5 times in a row"},
		{"no stream offered (405)", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}, ""},
		{"no stream offered (404)", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
		}, ""},
		{"an answer that is not a stream", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{}"))
		}, ""},
		{"server error", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
		}, "the server answered 500 Internal Server Error to the GET stream of "},
		{"bad gateway", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
		}, "the server answered 502 Bad Gateway to the GET stream of "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gets := 0
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				gets++
				mu.Unlock()
				tc.get(w)
			}))
			t.Cleanup(srv.Close)
			url := srv.URL + "/mcp"
			if tc.get == nil {
				// A loopback port nobody listens on: every GET fails to
				// connect.
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				url = "http://" + l.Addr().String() + "/mcp"
				l.Close()
			}
			var stderr strings.Builder
			u := testHTTPConn(t, url, UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: &stderr, Timeout: time.Second, Grace: time.Second})
			defer u.Stop(time.Second)
			u.getMin, u.getMax = time.Millisecond, 4*time.Millisecond
			runGETLoop(t, u)
			mu.Lock()
			n := gets
			if tc.get == nil {
				n = getRetries // counted by nobody: the notice says it
			}
			mu.Unlock()
			if tc.notice == "" {
				if stderr.Len() > 0 {
					t.Errorf("after %d GETs, stderr = %q; want nothing", n, stderr.String())
				}
			} else if !strings.Contains(stderr.String(), tc.notice) || !strings.Contains(stderr.String(), url) {
				t.Errorf("after %d GETs, stderr = %q; want it to say %q and the URL", n, stderr.String(), tc.notice)
			}
			if strings.Contains(tc.notice, "in a row") && n != getRetries {
				t.Errorf("%d GETs, want %d", n, getRetries)
			}
			if u.Wait(0) {
				status, _ := u.Exit()
				t.Errorf("the session ended: %s", status)
			}
		})
	}
}

// testHTTPConn is a session with url as Run connects it.
func testHTTPConn(t testing.TB, url string, env UpstreamEnv) *httpConn {
	t.Helper()
	up, err := HTTPUpstream(url, HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return up.(*httpUpstream).session(env)
}
