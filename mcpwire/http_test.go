package mcpwire

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestHTTPBodies(t *testing.T) {
	const ok1 = `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`
	const ok2 = `{"jsonrpc":"2.0","id":1,"result":{}}`
	for _, tt := range []struct {
		name   string
		sse    bool
		body   string
		passed string // what the reader passes on before the error
		err    string
	}{
		{name: "JSON answer", body: ok2, passed: ok2},
		{name: "JSON answer under a loose id", body: `{"jsonrpc":"2.0","id":1.0,"result":{}}`, err: "answers no pending request"},
		{name: "JSON without a version", body: `{"id":1,"result":{}}`, err: `without "jsonrpc"`},
		{name: "JSON batch", body: "[" + ok2 + "]", err: "batches"},
		{name: "SSE events", sse: true, body: "event: message\ndata: " + ok1 + "\n\nid: 7\ndata: " + ok2 + "\n\n", passed: "event: message\ndata: " + ok1 + "\n\nid: 7\ndata: " + ok2 + "\n\n"},
		{name: "SSE data over two lines", sse: true, body: "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n", passed: "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n"},
		{name: "SSE case variant after a good event", sse: true, body: "data: " + ok1 + "\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"Result\":{}}\n\n", passed: "data: " + ok1 + "\n\n", err: `"Result" would be read as "result"`},
		{name: "SSE second answer", sse: true, body: "data: " + ok2 + "\n\ndata: " + ok2 + "\n\n", passed: "data: " + ok2 + "\n\n", err: "answers no pending request"},
		{name: "SSE event cut off", sse: true, body: "data: " + ok2, passed: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b HTTPBodies
			b.Sent([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			fail := func(err error) error { return err }
			body := io.NopCloser(strings.NewReader(tt.body))
			var r io.ReadCloser
			if tt.sse {
				r = b.SSE(body, fail)
			} else {
				r = b.JSON(body, fail)
			}
			var got []byte
			buf := make([]byte, 7)
			var err error
			for {
				var n int
				n, err = r.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			if string(got) != tt.passed {
				t.Errorf("passed on %q, want %q", got, tt.passed)
			}
			if tt.err == "" {
				if !errors.Is(err, io.EOF) {
					t.Errorf("error %v, want EOF", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
		})
	}
}

// FuzzHTTPBodiesSSE checks that the SSE reader passes on only a prefix of
// the stream, made of whole events whose messages parse strictly.
func FuzzHTTPBodiesSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\r\n\r\n",
		"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n: comment\n\n",
		"data: [1]\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b HTTPBodies
		b.Sent([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		got, _ := io.ReadAll(b.SSE(io.NopCloser(strings.NewReader(string(data))), func(err error) error { return err }))
		if !strings.HasPrefix(string(data), string(got)) {
			t.Fatalf("passed on %q, not a prefix of %q", got, data)
		}
	})
}
