package proxy

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
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

// TestCancelAbandonsTheAnswer: once the server accepted the client's
// cancellation of a request, the request's POST is closed (a server need
// not answer a cancelled request, and the TypeScript SDK's keeps its stream
// open until the session ends), and the relay gets the one late answer
// that lets it forget the id (docs/PROXY.md, "Remote servers"). Another
// notification abandons nothing: the server's answer is read when it comes.
func TestCancelAbandonsTheAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		line      string
		abandoned bool
	}{
		{"the request cancelled", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, true},
		{"another request cancelled", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, false},
		{"another notification naming it", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":1,"progressToken":1,"progress":1}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			posted, closed := make(chan struct{}), make(chan struct{})
			release := make(chan struct{})
			const answer = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if !strings.Contains(string(body), `"method":"tools/call"`) {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				close(posted)
				select {
				case <-r.Context().Done():
					close(closed)
				case <-release:
					io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
				}
			}))
			defer srv.Close()
			u := testHTTPConn(t, srv.URL+"/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard, Timeout: testTimeout, Grace: time.Second})
			defer u.Stop(time.Second)
			if err := u.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet"}}` + "\n")); err != nil {
				t.Fatal(err)
			}
			<-posted
			if err := u.Send([]byte(tc.line + "\n")); err != nil {
				t.Fatal(err)
			}
			want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"` + cancelledMessage + `"}}` + "\n"
			if tc.abandoned {
				select {
				case <-closed:
				case <-time.After(10 * time.Second):
					t.Fatal("the cancelled request's POST is still open")
				}
			} else {
				// The server answers now: its answer is read, not dropped.
				close(release)
				want = answer + "\n"
			}
			type received struct {
				line []byte
				err  error
			}
			got := make(chan received, 1)
			go func() {
				line, err := u.Receive()
				got <- received{line, err}
			}()
			select {
			case r := <-got:
				if r.err != nil || string(r.line) != want {
					t.Errorf("Receive = %q, %v; want %q", r.line, r.err, want)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("nothing reached the relay; want %q", want)
			}
		})
	}
}

// TestRequestHeaders: the headers of the HTTP upstream's requests, message
// after message of one session: the protocol version a request says in its
// _meta, remembered for the messages after it when it is 2026-07-28 or
// later, an initialize without one sent with no version, the method header
// of that transport, and a Host given in the user's header.
func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	meta := func(v string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `"}`
	}
	for _, tc := range []struct {
		name    string
		header  http.Header
		msgs    []string
		version string // of the last message; "" none
		method  string // Mcp-Method of the last message; "" none
		host    string // the request's Host
	}{
		{"initialize without _meta", nil, []string{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`}, "", "", ""},
		{"a request with 2026-07-28 in _meta", nil, []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta("2026-07-28") + `}}`}, "2026-07-28", "tools/list", ""},
		{"a notification after a 2026-07-28 request", nil, []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta("2026-07-28") + `}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`}, "2026-07-28", "notifications/initialized", ""},
		{"a response after a 2026-07-28 request", nil, []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta("2026-07-28") + `}}`,
			`{"jsonrpc":"2.0","id":"s1","result":{}}`}, "2026-07-28", "", ""},
		{"a notification after an older request", nil, []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta("2025-11-25") + `}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`}, "", "", ""},
		{"a notification naming a version", nil, []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized","params":{` + meta("2026-07-28") + `}}`}, "", "", ""},
		{"a Host header", http.Header{"Host": {"mcp.example.com"}}, []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`}, "", "", "mcp.example.com"},
		{"a Host header with no value", http.Header{"Host": {}}, []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`}, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, err := HTTPUpstream("http://127.0.0.1:1/mcp", HTTPOptions{Header: tc.header})
			if err != nil {
				t.Fatal(err)
			}
			u := up.(*httpUpstream).session(UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard})
			defer u.Stop(time.Second)
			var req *http.Request
			for _, msg := range tc.msgs {
				m, err := mcpwire.Parse([]byte(msg))
				if err != nil {
					t.Fatal(err)
				}
				if req, err = u.request(http.MethodPost, []byte(msg), &m); err != nil {
					t.Fatal(err)
				}
			}
			if got := req.Header.Get(hdrVersion); got != tc.version {
				t.Errorf("%s: %q, want %q", hdrVersion, got, tc.version)
			}
			if got := req.Header.Get(hdrMethod); got != tc.method {
				t.Errorf("%s: %q, want %q", hdrMethod, got, tc.method)
			}
			if tc.host == "" {
				tc.host = "127.0.0.1:1"
			}
			if req.Host != tc.host {
				t.Errorf("Host: %q, want %q", req.Host, tc.host)
			}
		})
	}
}

// TestHeaderName: the Mcp-Name header of a request is the tool or prompt
// name or the resource URI as it is when it is printable ASCII with no
// white space around it, else base64 in the transport's =?base64?…?= form.
func TestHeaderName(t *testing.T) {
	t.Parallel()
	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	for _, tc := range []struct {
		name, msg, want string
		ok              bool
	}{
		{"a tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather"}}`, "get_weather", true},
		{"a space inside", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"a b"}}`, "a b", true},
		{"a tilde", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a~"}}`, "a~", true},
		{"a resource", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`, "file:///a", true},
		{"DEL", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u007f"}}`, b64("a\x7f"), true},
		{"a control character", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u001fb"}}`, b64("a\x1fb"), true},
		{"a line break", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\nb"}}`, b64("a\nb"), true},
		{"not ASCII", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"café"}}`, b64("café"), true},
		{"white space around", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":" a"}}`, b64(" a"), true},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"a"}}`, "", false},
		{"a name that is no string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := mcpwire.Parse([]byte(tc.msg))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := headerName(&m)
			if got != tc.want || ok != tc.ok {
				t.Errorf("headerName = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestNotFound: a 404 to initialize (no session yet) is no MCP endpoint at
// the URL, which ends the session saying so; a 404 to another request
// without a session is that request's error, answered by the proxy.
func TestNotFound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		line  string
		ended string // what the session's end says; "" it goes on
	}{
		{"initialize", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "no MCP endpoint at"},
		{"another request", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.NotFoundHandler())
			defer srv.Close()
			u := testHTTPConn(t, srv.URL+"/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard, Timeout: testTimeout, Grace: time.Second})
			defer u.Stop(time.Second)
			err := u.Send([]byte(tc.line + "\n"))
			if tc.ended != "" {
				if err == nil { // the session's end says it
					select {
					case <-u.ended:
						err = u.endErr
					case <-time.After(10 * time.Second):
					}
				}
				var ce *ConnectError
				if !errors.As(err, &ce) || !strings.Contains(ce.What, tc.ended) {
					t.Errorf("the session ended with %v; want it ended saying %q", err, tc.ended)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan []byte, 1)
			go func() {
				line, _ := u.Receive()
				got <- line
			}()
			select {
			case line := <-got:
				if !strings.Contains(string(line), `"id":1,"error"`) || !strings.Contains(string(line), "404") {
					t.Errorf("the relay got %q, want the proxy's error answer naming 404", line)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("nothing reached the relay, and the session goes on")
			}
		})
	}
}

// TestGETStreamByVersion: the GET stream of the server's own messages is
// opened after initialized only for protocols before 2026-07-28 (which
// have one); a session whose version is not known yet opens none.
func TestGETStreamByVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		opened  bool
	}{
		{"", false},
		{"2026-07-28", false},
		{"2026-12-01", false},
		{"2025-11-25", true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream here
			}))
			defer srv.Close()
			u := testHTTPConn(t, srv.URL+"/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard, Timeout: testTimeout, Grace: time.Second})
			defer u.Stop(time.Second)
			u.mu.Lock()
			u.version = tc.version
			u.mu.Unlock()
			u.startGET()
			opened := true
			u.getOnce.Do(func() { opened = false })
			if opened != tc.opened {
				t.Errorf("GET stream opened: %v, want %v", opened, tc.opened)
			}
		})
	}
}

// TestGETStreamBackoff: a GET stream that ends without a message is opened
// again after a delay that doubles up to its most, getRetries times:
// the loop takes at least the sum of those delays (a lower bound only, which
// a loaded machine does not break).
func TestGETStreamBackoff(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	u := testHTTPConn(t, srv.URL+"/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard, Timeout: time.Second, Grace: time.Second})
	defer u.Stop(time.Second)
	u.getMin, u.getMax = 20*time.Millisecond, 80*time.Millisecond
	var least time.Duration
	for i, d := 0, u.getMin; i < getRetries; i, d = i+1, min(2*d, u.getMax) {
		least += d
	}
	start := time.Now()
	runGETLoop(t, u)
	if took := time.Since(start); took < least {
		t.Errorf("getRetries empty streams took %v, want at least %v (the delays doubling from %v to %v)", took, least, u.getMin, u.getMax)
	}
}

// runGETLoop runs u's GET stream loop until it gives up, at most 10 s.
func runGETLoop(t *testing.T, u *httpConn) {
	t.Helper()
	looped := make(chan struct{})
	go func() {
		u.getLoop()
		close(looped)
	}()
	select {
	case <-looped:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream is still opened again after 10 s")
	}
}

// TestGETStreamMessagesReset: a GET stream that passed a message is no
// failure: it is opened again however many times it ends so, and only
// getRetries empty ones in a row after it give it up.
func TestGETStreamMessagesReset(t *testing.T) {
	t.Parallel()
	const withMessage = getRetries + 1
	var mu sync.Mutex
	gets := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gets++
		n := gets
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if n <= withMessage {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		}
	}))
	defer srv.Close()
	u := testHTTPConn(t, srv.URL+"/mcp", UpstreamEnv{MaxMessageBytes: 1 << 16, Stderr: io.Discard, Timeout: time.Second, Grace: time.Second})
	defer u.Stop(time.Second)
	u.getMin, u.getMax = time.Millisecond, 4*time.Millisecond
	go func() { // the relay reads what the stream passes on
		for {
			if _, err := u.Receive(); err != nil {
				return
			}
		}
	}()
	runGETLoop(t, u)
	mu.Lock()
	defer mu.Unlock()
	if gets != withMessage+getRetries {
		t.Errorf("%d GETs, want %d: %d streams with a message, then %d empty ones", gets, withMessage+getRetries, withMessage, getRetries)
	}
}
