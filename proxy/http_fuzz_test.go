package proxy

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// FuzzBridgeAnswer feeds arbitrary answer bodies (an event stream or a JSON
// body, by the first byte) to the bridge's reader of the answer to request
// 1 and checks what reaches the relay: whole lines, each one strict
// JSON-RPC message with no line break inside, at most one answer, the
// request's, and after it only notifications. Seeds are in
// testdata/fuzz/FuzzBridgeAnswer.
func FuzzBridgeAnswer(f *testing.F) {
	f.Add(byte(0), []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add(byte(0), []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\n"+
		"data:  \"id\":1,\"result\":{\"tools\":[]}}\n\n"))
	f.Add(byte(1), []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"))
	f.Fuzz(func(t *testing.T, kind byte, body []byte) {
		u := testHTTPConn(t, "http://127.0.0.1:1/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard})
		ct := "text/event-stream"
		if kind%2 == 1 {
			ct = "application/json"
		}
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(body))}
		lines, _, _ := relayAnswer(t, u, resp)
		answered := false
		for _, line := range lines {
			if len(line) == 0 || line[len(line)-1] != '\n' || bytes.ContainsAny(line[:len(line)-1], "\r\n") {
				t.Fatalf("not one line: %q", line)
			}
			msg, err := mcpwire.ParseFromServer(line[:len(line)-1])
			if err != nil {
				t.Fatalf("relayed %q: %v", line, err)
			}
			switch {
			case msg.Kind == mcpwire.KindResponse:
				if answered || string(msg.ID) != "1" {
					t.Fatalf("a second answer, or another id: %q", line)
				}
				answered = true
			case answered && msg.Kind != mcpwire.KindNotification:
				t.Fatalf("a %s after the answer: %q", msg.Kind, line)
			}
		}
	})
}
