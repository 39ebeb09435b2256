package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestClientLeftSessionEndsClean: once the client left and the proxy sent
// the DELETE of the session, what the server answers 404 to (here the GET
// stream, opened again after the DELETE ended it, before the DELETE's own
// answer came back, as it can on a loaded machine) is that deletion, not a
// server that ended the session: the session ends cleanly. A readiness
// probe of the front took it for the server's fault.
func TestClientLeftSessionEndsClean(t *testing.T) {
	t.Parallel()
	var (
		mu        sync.Mutex
		deleted   bool
		streamEnd = make(chan struct{})
		lateGET   = make(chan struct{}, 1)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gone := deleted
		mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "":
			answerInitialize(w)
		case gone:
			if r.Method == http.MethodGet {
				select {
				case lateGET <- struct{}{}:
				default:
				}
			}
			http.Error(w, "session not found", http.StatusNotFound)
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusAccepted)
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-streamEnd:
			case <-r.Context().Done():
			}
		case r.Method == http.MethodDelete:
			mu.Lock()
			deleted = true
			mu.Unlock()
			close(streamEnd)
			// The DELETE's answer comes back only after the GET stream
			// was opened again and refused.
			select {
			case <-lateGET:
			case <-time.After(testTimeout):
			}
		}
	}))
	defer srv.Close()
	u := testHTTPConn(t, srv.URL+"/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard, Timeout: testTimeout, Grace: testTimeout})
	defer u.Stop(time.Second)
	u.getMin, u.getMax = 10*time.Millisecond, 10*time.Millisecond
	initialize(t, u)
	if err := u.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	u.CloseInput()
	if !u.Wait(testTimeout) {
		t.Fatal("the session did not end")
	}
	if status, clean := u.Exit(); !clean {
		t.Errorf("the session ended with %q after the client left; want it ended cleanly", status)
	}
}

// TestDeleteFails: a DELETE of the session that gets no answer (the
// connection dropped) still ends the session cleanly when the client left:
// the server was told as far as it could be.
func TestDeleteFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		default:
			if r.Header.Get("Mcp-Session-Id") == "" {
				answerInitialize(w)
				return
			}
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	u := testHTTPConn(t, srv.URL+"/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard, Timeout: testTimeout, Grace: testTimeout})
	defer u.Stop(time.Second)
	initialize(t, u)
	u.CloseInput()
	if status, clean := u.Exit(); !clean {
		t.Errorf("the session ended with %q; want it ended cleanly", status)
	}
}

// answerInitialize answers an initialize with session s1 and a protocol
// version that has the GET stream.
func answerInitialize(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "s1")
	io.WriteString(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
}

// initialize sends u's initialize and reads its answer.
func initialize(t *testing.T, u *httpConn) {
	t.Helper()
	if err := u.Send([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Receive(); err != nil {
		t.Fatal(err)
	}
}
