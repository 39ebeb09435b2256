package service

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBodyTimeout: a client that sends its headers and then trickles (or
// withholds) its body holds a connection and a handler only until
// ReadBodyTimeout: it is answered 408 (slowloris on the body: the header
// timeout does not cover it). A body sent in time is not cut, nor is a
// response that streams longer than the timeout after it.
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		// Stream past the body timeout, as an event stream answer does.
		w.WriteHeader(http.StatusOK)
		for i := range 4 {
			fmt.Fprintf(w, "%d:%d\n", i, len(b))
			http.NewResponseController(w).Flush()
			time.Sleep(150 * time.Millisecond)
		}
	})
	s := start(t, Options{Handler: mux, ReadBodyTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(s.url, "http://")
	for _, tt := range []struct {
		name   string
		body   string        // sent at once
		stall  time.Duration // then the connection stays open this long, the body unfinished
		status int
		stream string
	}{
		// Answered about 300 ms after the headers; checked against half the
		// stall: 10 s leaves a loaded machine its lateness, and a body
		// timeout that does not work never answers.
		{"body withheld", "", 10 * time.Second, http.StatusRequestTimeout, ""},
		{"body trickled then stalled", `{"jsonrpc":`, 10 * time.Second, http.StatusRequestTimeout, ""},
		{"body in time, answer streamed past the timeout", `{"jsonrpc":"2.0"}`, 0, http.StatusOK, "0:17\n1:17\n2:17\n3:17\n"},
		{"chunked body in time, answer streamed past the timeout", "chunked", 0, http.StatusOK, "0:17\n1:17\n2:17\n3:17\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n := len(tt.body)
			if tt.stall > 0 {
				n += 100 // declared, never all sent
			}
			if tt.body == "chunked" {
				fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"jsonrp\r\n9\r\nc\":\"2.0\"}\r\n0\r\n\r\n", addr)
			} else {
				fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, n, tt.body)
			}
			c.SetReadDeadline(time.Now().Add(tt.stall + 10*time.Second)) // a hang bound
			began := time.Now()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer %s after the headers: %v", time.Since(began), err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || err != nil {
				t.Fatalf("%d %q %v, want %d", resp.StatusCode, b, err, tt.status)
			}
			if tt.stall > 0 && time.Since(began) > tt.stall/2 {
				t.Errorf("answered after %s, want about the 300ms timeout", time.Since(began))
			}
			if tt.stream != "" && string(b) != tt.stream {
				t.Errorf("streamed %q, want %q", b, tt.stream)
			}
		})
	}
}
