package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

const secret = "s3cret-token-value"

func TestHTTPExampleServer(t *testing.T) {
	tests := []struct {
		name     string
		mode     string
		args     []string
		protocol string
		pages    int
	}{
		{name: "stateful", protocol: "2025-11-25", pages: 1},
		{name: "stateless", args: []string{"--stateless"}, protocol: "2026-07-28", pages: 1},
		{name: "paginated", mode: fixtures.ModePaginated, protocol: "2025-11-25", pages: 5},
		{name: "paginated stateless", mode: fixtures.ModePaginated, args: []string{"--stateless"}, protocol: "2026-07-28", pages: 5},
	}
	var want *digest.Result
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := fixtures.StartExampleHTTP(t, tt.mode, tt.args...)
			spec, err := ParseSpec(url, nil)
			if err != nil || spec.URL != url {
				t.Fatalf("ParseSpec(%q) = %+v, %v", url, spec, err)
			}
			pages := 0
			snap, err := Load(context.Background(), spec, Options{Progress: func(stage string, page int) {
				if stage == "tools/list" {
					pages = page
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			checkExample(t, snap, tt.protocol)
			if pages != tt.pages {
				t.Errorf("%d pages, want %d", pages, tt.pages)
			}
			r := digest.Compute(snap)
			if want == nil {
				want = r
			} else if r.Sets[digest.KindTool] != want.Sets[digest.KindTool] {
				t.Errorf("tools set digest %s, want %s", r.Sets[digest.KindTool], want.Sets[digest.KindTool])
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	closed := func() string { // a port nobody listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/mcp"
	}
	tests := []struct {
		name  string
		url   func(t *testing.T) string
		opts  Options
		is    error
		stage string
		page  int
		msg   string
	}{
		{
			name: "cursor loop", url: func(t *testing.T) string { return fixtures.StartExampleHTTP(t, fixtures.ModeCursorLoop) },
			is: ErrCursorLoop, stage: "tools/list", page: 2, msg: `cursor "cursor-loop" repeated (cursor loop)`,
		},
		{
			name: "oversized", url: func(t *testing.T) string { return fixtures.StartExampleHTTP(t, fixtures.ModeOversized) },
			opts: Options{Timeout: 2 * time.Minute}, // 17 MiB is slow to make and read under -race on a small machine
			is:   ErrMessageTooLarge, stage: "tools/list", page: 1, msg: "more than 16777216 bytes",
		},
		{
			name: "oversized event, smaller cap", url: func(t *testing.T) string { return fixtures.StartExampleHTTP(t, "") },
			opts: Options{MaxMessageBytes: 1000},
			is:   ErrMessageTooLarge, stage: "tools/list", page: 1, msg: "more than 1000",
		},
		{
			name: "oversized JSON body", url: func(t *testing.T) string { return sdkHTTP(t, 30, &mcp.StreamableHTTPOptions{JSONResponse: true}, nil) },
			opts: Options{MaxMessageBytes: 1000},
			is:   ErrMessageTooLarge, stage: "tools/list", page: 1, msg: "more than 1000",
		},
		{
			name: "never answers", url: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body) // then the server notices the client leaving
					select {
					case <-r.Context().Done():
					case <-time.After(10 * time.Second):
					}
				}))
				t.Cleanup(srv.Close)
				return srv.URL
			},
			opts: Options{Timeout: 300 * time.Millisecond},
			is:   ErrTimeout, stage: "initialize", msg: "initialize: timeout: no complete answer within 300ms",
		},
		{
			name: "not MCP", url: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(`{"hello":"world"}`))
				}))
				t.Cleanup(srv.Close)
				return srv.URL
			},
			stage: "initialize",
		},
		{
			name: "JSON answer under a loose id", url: func(t *testing.T) string {
				return rawHTTP(t, func(id json.RawMessage) (string, string) {
					return "application/json", `{"jsonrpc":"2.0","id":` + string(id) + `.0,"result":{}}`
				})
			},
			is: ErrProtocol, stage: "initialize", msg: "answers no pending request (the TypeScript SDK and go-sdk would take it for the answer to request 1)",
		},
		{
			name: "SSE answer with a case variant", url: func(t *testing.T) string {
				return rawHTTP(t, func(id json.RawMessage) (string, string) {
					return "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(id) +
						",\"result\":{\"supportedVersions\":[\"2026-07-28\"],\"instructions\":\"evil\",\"Instructions\":\"good\"}}\n\n"
				})
			},
			is: ErrProtocol, stage: "initialize", msg: `member "Instructions" would be read as "instructions"`,
		},
		{
			name: "SSE answer to nothing pending", url: func(t *testing.T) string {
				return rawHTTP(t, func(id json.RawMessage) (string, string) {
					return "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\n"
				})
			},
			is: ErrProtocol, stage: "initialize", msg: `a response with id "x" answers no pending request`,
		},
		{
			name: "SSE lone CR", url: sse("data: {\"jsonrpc\":\"2.0\",\"id\":ID,\r\"result\":{}}\n\n"),
			is: mcpwire.ErrEventStream, stage: "initialize", msg: "a CR that is not part of a CRLF line end",
		},
		{
			name: "SSE byte-order mark", url: sse("\xef\xbb\xbfdata: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}\n\n"),
			is: mcpwire.ErrEventStream, stage: "initialize", msg: "byte-order mark",
		},
		{
			name: "SSE event name with a space", url: sse("event: message \ndata: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}\n\n"),
			is: mcpwire.ErrEventStream, stage: "initialize", msg: `an event named "message "`,
		},
		{
			name: "SSE second answer", url: sse("data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}\n\n"),
			is: mcpwire.ErrStream, stage: "initialize", msg: "a second answer",
		},
		{
			name: "SSE cut off", url: sse("data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}\n"),
			is: mcpwire.ErrEventStream, stage: "initialize", msg: "ends inside an event",
		},
		{
			name: "latin1 charset", url: func(t *testing.T) string {
				return rawHTTP(t, func(id json.RawMessage) (string, string) {
					return "application/json; charset=iso-8859-1", `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`
				})
			},
			is: mcpwire.ErrContentType, stage: "initialize", msg: "charset other than utf-8",
		},
		{
			name: "no content type", url: func(t *testing.T) string {
				return rawHTTP(t, func(id json.RawMessage) (string, string) {
					return "", `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`
				})
			},
			is: mcpwire.ErrContentType, stage: "initialize", msg: "no Content-Type",
		},
		{
			name: "401", url: status(http.StatusUnauthorized, nil),
			is: mcpwire.ErrUnauthorized, stage: "initialize", msg: "the server refused the POST request with 401 Unauthorized: it wants credentials",
		},
		{
			name: "403", url: status(http.StatusForbidden, nil),
			is: mcpwire.ErrForbidden, stage: "initialize", msg: "403 Forbidden: the credentials sent do not allow it",
		},
		{
			name: "302 of a POST", url: status(http.StatusFound, http.Header{"Location": {"/elsewhere"}}),
			is: mcpwire.ErrRedirect, stage: "initialize", msg: "a 302 redirect of a POST",
		},
		{
			name: "session id changed", url: func(t *testing.T) string {
				n := 0
				var mu sync.Mutex
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					n++
					w.Header().Set("Mcp-Session-Id", fmt.Sprint("session-", n))
					mu.Unlock()
					http.Error(w, "no", http.StatusBadRequest) // server/discover refused: initialize follows
				}))
				t.Cleanup(srv.Close)
				return srv.URL
			},
			is: ErrProtocol, stage: "initialize", msg: "changed its Mcp-Session-Id",
		},
		{
			name: "untrusted TLS", url: func(t *testing.T) string {
				srv := httptest.NewTLSServer(http.NotFoundHandler())
				srv.Config.ErrorLog = log.New(io.Discard, "", 0)
				t.Cleanup(srv.Close)
				return srv.URL
			},
			stage: "start", msg: "its TLS certificate is signed by an unknown authority",
		},
		{
			name: "TLS to plain HTTP", url: func(t *testing.T) string {
				srv := httptest.NewServer(http.NotFoundHandler())
				t.Cleanup(srv.Close)
				return strings.Replace(srv.URL, "http://", "https://", 1)
			},
			stage: "start", msg: "it does not answer in TLS (check whether the URL should be http://)",
		},
		{
			name: "unreachable", url: func(*testing.T) string { return closed() },
			stage: "start", msg: "the connection was refused (check that the server is running",
		},
		{
			name: "no such host", url: func(*testing.T) string { return "http://mcpsign-no-such-host.invalid/mcp" },
			stage: "start",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			snap, err := Load(context.Background(), Spec{URL: tt.url(t)}, tt.opts)
			if err == nil {
				t.Fatalf("no error; %d tools", len(snap.Tools))
			}
			var se *StageError
			if !errors.As(err, &se) || se.Stage != tt.stage || se.Page != tt.page {
				t.Errorf("error %q is not a StageError at %s page %d", err, tt.stage, tt.page)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			t.Logf("%v: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// sdkHTTP serves a go-sdk server (newSDKServer) over Streamable HTTP on
// 127.0.0.1, behind mw if given.
func sdkHTTP(t testing.TB, tools int, opts *mcp.StreamableHTTPOptions, mw func(http.Handler) http.Handler) string {
	t.Helper()
	srv := newSDKServer(tools, 0)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	if mw != nil {
		h = mw(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// headerLog records the headers of each request.
type headerLog struct {
	mu   sync.Mutex
	reqs []http.Header
}

func (l *headerLog) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Header.Clone())
		l.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func TestHTTPHeaders(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		log := &headerLog{}
		url := sdkHTTP(t, 3, &mcp.StreamableHTTPOptions{Stateless: stateless}, log.middleware)
		headers, err := mcpwire.ParseHeaders([]string{"Authorization: Bearer ${MCPSIGN_TEST_TOKEN}", "X-Extra:  two words "}, func(name string) (string, bool) {
			return secret, name == "MCPSIGN_TEST_TOKEN"
		})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := Load(context.Background(), Spec{URL: url}, Options{Headers: headers})
		if err != nil {
			t.Fatalf("stateless=%v: %v", stateless, err)
		}
		want := "2025-11-25"
		if stateless {
			want = "2026-07-28"
		}
		if snap.ProtocolVersion != want || len(snap.Tools) != 3 {
			t.Errorf("stateless=%v: protocol %q, %d tools", stateless, snap.ProtocolVersion, len(snap.Tools))
		}
		log.mu.Lock()
		seen := map[string]bool{}
		for i, h := range log.reqs {
			if h.Get("X-Extra") != "two words" {
				t.Errorf("request %d: X-Extra %q", i, h.Get("X-Extra"))
			}
			// Every request after the handshake names the protocol version:
			// the server is read under every version of the initialize
			// handshake too, each in a session of its own
			// (docs/DISCOVERY.md, "Both eras").
			v := h.Get("Mcp-Protocol-Version")
			seen[v] = true
			if i >= 2 && v != want && v != "" && !mcpwire.IsLegacy(v) {
				t.Errorf("request %d: Mcp-Protocol-Version %q, want %q", i, v, want)
			}
		}
		for _, v := range mcpwire.LegacyVersions() {
			if !seen[v] {
				t.Errorf("stateless=%v: protocol versions sent %v, want every version of the initialize handshake read", stateless, seen)
				break
			}
		}
		if stateless && !seen[ProtocolModern] {
			t.Errorf("stateless: protocol versions sent %v, want both eras read", seen)
		}
		last := log.reqs[len(log.reqs)-1]
		log.mu.Unlock()
		if v := last.Get("Mcp-Protocol-Version"); !stateless && !mcpwire.IsLegacy(v) {
			t.Errorf("last request: Mcp-Protocol-Version %q, want a version of the initialize handshake", v)
		}
	}
}

// TestHTTPHeaderValuesNeverShown: a refused token, and a redirect to another
// origin, fail without the header value in the error, and the other origin
// never sees the header.
func TestHTTPHeaderValuesNeverShown(t *testing.T) {
	log := &headerLog{}
	good := sdkHTTP(t, 3, nil, log.middleware)
	headers := http.Header{"Authorization": {"Bearer wrong-" + secret}}
	_, err := Load(context.Background(), Spec{URL: good}, Options{Headers: headers})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("error %v: want an error without the header value", err)
	}
	if !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("error %q does not say Unauthorized", err)
	}
	t.Log(err)

	other := &headerLog{}
	otherURL := sdkHTTP(t, 3, nil, other.middleware)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	headers = http.Header{"Authorization": {"Bearer " + secret}}
	_, err = Load(context.Background(), Spec{URL: redirect.URL + "/mcp"}, Options{Headers: headers})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "redirect to another origin") {
		t.Fatalf("error %v: want a refused redirect without the header value", err)
	}
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(other.reqs) > 0 {
		t.Errorf("the other origin got %d requests", len(other.reqs))
	}
}

func TestHeaderLineBreak(t *testing.T) {
	if _, err := Load(context.Background(), Spec{URL: "http://127.0.0.1:1/"}, Options{Headers: http.Header{"X": {"a\r\nb"}}}); err == nil {
		t.Error("a header value with a line break was accepted")
	}
}

// sse serves body (ID replaced by each request's id) as the
// text/event-stream answer to every request.
func sse(body string) func(t *testing.T) string {
	return func(t *testing.T) string {
		return rawHTTP(t, func(id json.RawMessage) (string, string) {
			return "text/event-stream", strings.ReplaceAll(body, "ID", string(id))
		})
	}
}

// status answers every request with code and header.
func status(code int, header http.Header) func(t *testing.T) string {
	return func(t *testing.T) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			maps.Copy(w.Header(), header)
			w.WriteHeader(code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
}

// rawHTTP serves hand-written Streamable HTTP answers: answer gets the id
// of each request posted and returns the response's content type and body.
func rawHTTP(t *testing.T, answer func(id json.RawMessage) (contentType, body string)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		ct, body := answer(req.ID)
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing: no Content-Type at all
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
