package proxy

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// answerLines gives the HTTP upstream's reader the answer (status, content
// type, body) to the posted tools/list request 1 and returns the lines
// that reach the relay; none of these answers may end the session.
func answerLines(t *testing.T, status int, contentType, body string) []string {
	t.Helper()
	lines, err := answerEnd(t, status, contentType, body)
	if err != nil {
		t.Errorf("the answer ended the session: %v", err)
	}
	return lines
}

// answerEnd is answerLines for an answer that may end the session: it
// returns the error the session ended with, nil if it did not.
func answerEnd(t *testing.T, status int, contentType, body string) (lines []string, ended error) {
	t.Helper()
	u := testHTTPConn(t, "http://127.0.0.1:1/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard})
	resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Content-Type": {contentType}},
		Body: io.NopCloser(strings.NewReader(body))}
	got, cut, ended := relayAnswer(t, u, resp)
	if cut {
		t.Error("the answer was cut short")
	}
	for _, line := range got {
		lines = append(lines, string(line))
	}
	return lines, ended
}

// relayAnswer hands u resp as the answer to a tools/list of id 1, and
// returns what reached the relay, whether the answer was cut short, and
// the error the session ended with (nil: it went on); u is then ended.
func relayAnswer(t testing.TB, u *httpConn, resp *http.Response) (lines [][]byte, cut bool, ended error) {
	t.Helper()
	posted := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	m, err := mcpwire.Parse(posted)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := u.Receive()
			if err != nil {
				return
			}
			lines = append(lines, line)
		}
	}()
	cut = u.answer(resp, &m, posted)
	select {
	case <-u.ended:
		ended = u.endErr
	default:
	}
	u.end(io.EOF)
	<-done
	return lines, cut, ended
}

// TestAnswerRelayed: what of an answer body reaches the relay. Of an event
// stream, the answer and every notification after it, in order; of an
// error status, the server's JSON-RPC error answer as it is only when it is
// a JSON body that reads strictly as the error answer to the request, else
// an error answer of the proxy's naming the status (docs/PROXY.md,
// "Remote servers").
func TestAnswerRelayed(t *testing.T) {
	t.Parallel()
	const (
		answer   = `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`
		note     = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
		srvError = `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unsupported protocol version"}}`
		proxyErr = `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"mcpsign proxy: the server answered Bad Request"}}`
	)
	sse := func(msgs ...string) string {
		var b strings.Builder
		for _, m := range msgs {
			b.WriteString("event: message\ndata: " + m + "\n\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		want        []string
	}{
		{"a stream: the answer and the notifications after it", 200, "text/event-stream", sse(note, answer, note, note), []string{note, answer, note, note}},
		{"a JSON answer", 200, "application/json", answer, []string{answer}},
		{"an error status with the server's error answer", 400, "application/json", srvError, []string{srvError}},
		{"an error status with an error answer in a stream", 400, "text/event-stream", sse(srvError), []string{proxyErr}},
		{"an error status with a result", 400, "application/json", answer, []string{proxyErr}},
		{"an error status with another request's error", 400, "application/json", strings.Replace(srvError, `"id":1`, `"id":2`, 1), []string{proxyErr}},
		{"an error status with no JSON", 400, "text/plain", "bad request", []string{proxyErr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := answerLines(t, tc.status, tc.contentType, tc.body)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = w + "\n"
			}
			if !slices.Equal(got, want) {
				t.Errorf("relayed\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestAnswerBreaksTheTransport: an answer body that breaks the transport
// ends the session with a protocol violation, and nothing of it reaches
// the relay.
func TestAnswerBreaksTheTransport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, contentType, body string
	}{
		{"a JSON answer to another request", "application/json", `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"a JSON body that is no message", "application/json", `[]`},
		{"a second answer in a stream", "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lines, err := answerEnd(t, 200, tc.contentType, tc.body)
			if !errors.Is(err, mcpwire.ErrProtocol) {
				t.Errorf("the session ended with %v, want a protocol violation", err)
			}
			if len(lines) != 0 {
				t.Errorf("relayed %q, want nothing", lines)
			}
		})
	}
}

// TestAsLine: a message reaches the relay as one line, its bytes as the
// server sent them (white space between tokens kept) unless it holds a
// line break, LF or CR, outside its strings, which is taken out with the
// other white space between tokens; a line break inside a string stays
// escaped, as JSON has it.
func TestAsLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"one line with spaces", `{"a": 1, "b": [1, 2]}`, `{"a": 1, "b": [1, 2]}`},
		{"white space around it", " \t{\"a\": 1}\n", `{"a": 1}`},
		{"a line feed between tokens", "{\"a\":\n 1}", `{"a":1}`},
		{"a carriage return between tokens", "{\"a\":\r 1}", `{"a":1}`},
		{"both", "{\"a\":\r\n 1,\n\"b\": \"x y\"}", `{"a":1,"b":"x y"}`},
		{"an escaped line break in a string", `{"a": "x\ny"}`, `{"a": "x\ny"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := asLine([]byte(tc.msg))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want+"\n" {
				t.Errorf("asLine(%q) = %q, want %q", tc.msg, got, tc.want+"\n")
			}
		})
	}
}

// TestAsLineNotJSON: a message with a line break that is not JSON is a
// protocol violation, not a line.
func TestAsLineNotJSON(t *testing.T) {
	t.Parallel()
	if line, err := asLine([]byte("{\"a\":\n}")); !errors.Is(err, mcpwire.ErrProtocol) {
		t.Errorf("asLine = %q, %v, want a protocol violation", line, err)
	}
}
