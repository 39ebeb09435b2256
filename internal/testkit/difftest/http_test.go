package difftest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/difftest/scriptserver"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/source"
)

// The HTTP half of the differential tests (docs/REMOTE.md, "How it is
// tested"): a table of hostile Streamable HTTP servers (httptest, on
// 127.0.0.1, speaking raw HTTP), each listed by `mcpsign verify-pin` and by
// the two official clients over HTTP (the TypeScript SDK's
// StreamableHTTPClientTransport through testdata/npm/tsclient.mjs, go-sdk's
// StreamableClientTransport). The oracle: either mcpsign refuses the server
// (exit 1 or 2, in one line), or what it checked (the honest lock) is
// exactly what both clients hold. Rows marked legal must pass: the strict
// reader may not refuse what official servers write.

// httpTiming is the clients' timing over HTTP: a request has a little
// longer than over stdio (rows that cut an answer short wait it out), and
// there are no list_changed storms to settle.
var httpTiming = timing{request: 4 * time.Second, settle: 100 * time.Millisecond}

// exchange is one POSTed request as the hostile server sees it.
type exchange struct {
	w      http.ResponseWriter
	r      *http.Request
	method string
	id     json.RawMessage
	n      int // how many requests of this method came before, from 1
}

// honest is the honest answer to the request.
func (x *exchange) honest() string { return scriptserver.HonestAnswer(x.method, x.id) }

// evil is an answer the lock does not hold: poisoned instructions or tools,
// the honest answer for other methods.
func (x *exchange) evil() string {
	switch x.method {
	case "initialize":
		return `{"jsonrpc":"2.0","id":` + string(x.id) + `,"result":` + scriptserver.EvilInit + `}`
	case "tools/list":
		return `{"jsonrpc":"2.0","id":` + string(x.id) + `,"result":{"tools":[` + scriptserver.ToolEvilGreet + `,` + scriptserver.ToolSearch + `]}}`
	}
	return x.honest()
}

// write sends the response: the Content-Type ("" for none at all), the
// status, then each chunk flushed on its own (a chunk "!sleep" waits a
// moment first).
func (x *exchange) write(contentType string, status int, chunks ...string) {
	if contentType == "" {
		x.w.Header()["Content-Type"] = nil
	} else {
		x.w.Header().Set("Content-Type", contentType)
	}
	x.w.WriteHeader(status)
	flush(x.w)
	for _, c := range chunks {
		if rest, ok := strings.CutPrefix(c, "!sleep"); ok {
			select {
			case <-time.After(400 * time.Millisecond):
			case <-x.r.Context().Done():
				return
			}
			c = rest
		}
		if _, err := io.WriteString(x.w, c); err != nil {
			return
		}
		flush(x.w)
	}
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

// sse is one event of the message.
func sse(msg string) string { return "event: message\ndata: " + msg + "\n\n" }

// httpRow is one hostile HTTP server of the table.
type httpRow struct {
	name string
	// respond answers one request, or returns false for the honest answer
	// (one event in a text/event-stream, as the TypeScript SDK's servers
	// write).
	respond func(x *exchange) bool
	// get, when set, answers the clients' GET (the standalone stream);
	// nil answers 405.
	get func(w http.ResponseWriter, r *http.Request)
	// header is set on every response.
	header http.Header
	// sessions: a fresh Mcp-Session-Id on every response.
	sessions bool
	// legal: official servers write this; mcpsign must pass it.
	legal bool
	// refusal, when set, is what mcpsign's one line must say.
	refusal string
	// tls serves the row over HTTPS with a certificate nobody trusts.
	tls bool
	// args are more arguments of verify-pin.
	args []string
}

// httpRows is the table.
func httpRows(evilOrigin string) []httpRow {
	on := func(method string, f func(x *exchange)) func(x *exchange) bool {
		return func(x *exchange) bool {
			if x.method != method {
				return false
			}
			f(x)
			return true
		}
	}
	const es, js = "text/event-stream", "application/json"
	return []httpRow{
		{name: "honest", legal: true},
		{name: "json-responses", legal: true, respond: func(x *exchange) bool {
			x.write(js, 200, x.honest())
			return true
		}},
		{name: "json-charset-utf8", legal: true, respond: func(x *exchange) bool {
			x.write("application/json; charset=UTF-8", 200, x.honest())
			return true
		}},
		{name: "sse-crlf-id-retry-priming-comments", legal: true, respond: func(x *exchange) bool {
			x.write(es, 200, "id: p-1\r\nretry: 1000\r\ndata: \r\n\r\n", ": keepalive\r\n\r\n",
				"event: message\r\nid: e-1\r\ndata:"+x.honest()+"\r\n\r\n")
			return true
		}},
		{name: "sse-data-over-lines", legal: true, respond: on("tools/list", func(x *exchange) {
			h := x.honest()
			i := strings.Index(h, `"result":`)
			x.write(es, 200, "data: "+h[:i]+"\ndata: "+h[i:]+"\n\n")
		})},
		{name: "sse-notification-first", legal: true, respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"listing"}}`), "!sleep"+sse(x.honest()))
		})},
		{name: "sse-uppercase-type", legal: true, respond: func(x *exchange) bool {
			x.write("Text/Event-Stream", 200, sse(x.honest()))
			return true
		}},
		{name: "sse-slow-trickle", legal: true, respond: on("tools/list", func(x *exchange) {
			ev := sse(x.honest())
			third := len(ev) / 3
			x.write(es, 200, ev[:third], "!sleep"+ev[third:2*third], "!sleep"+ev[2*third:])
		})},
		{name: "session-id-stable", legal: true, header: http.Header{"Mcp-Session-Id": {"session-1"}}},
		{name: "redirect-307-same-origin", legal: true, respond: func(x *exchange) bool {
			if x.r.URL.Path == "/mcp" {
				http.Redirect(x.w, x.r, "/mcp2", http.StatusTemporaryRedirect)
				return true
			}
			return false
		}},

		// The four attacks that started it.
		{name: "attack-lone-cr-tools", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, `data: {"jsonrpc":"2.0","id":`+string(x.id)+`,"result":{"tools":[`+"\r"+scriptserver.HonestTools+`],"x":[`+"\n"+
				`data: `+scriptserver.ToolEvilGreet+","+scriptserver.ToolSearch+`]}}`+"\n\n")
		})},
		{name: "attack-lone-cr-initialize", respond: on("initialize", func(x *exchange) {
			x.write(es, 200, `data: {"jsonrpc":"2.0","id":`+string(x.id)+`,"result":`+scriptserver.InitHead+`,"instructions":"`+scriptserver.HonestInstr+`","x":[`+"\r"+`],"y":[`+"\n"+
				`data: ],"instructions":"`+scriptserver.EvilInstr+`"}}`+"\n\n")
		})},
		{name: "attack-bom", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, "\ufeff"+"data: "+x.evil()+"\n\n", sse(x.honest()))
		})},
		{name: "attack-event-name-space", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, "event: message \ndata: "+x.honest()+"\n\n", "!sleep"+sse(x.evil()))
		})},

		// Framing the two readers split differently.
		{name: "latin1-bom", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, "\u00ef\u00bb\u00bf"+"data: "+x.evil()+"\n\n", sse(x.honest()))
		})},
		{name: "nbsp-after-data", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(x.evil()+"\u00a0"), sse(x.honest()))
		})},
		{name: "event-cut-off", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, "data: "+x.evil())
		})},
		{name: "unknown-field", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, "Data: "+x.evil()+"\n\n", sse(x.honest()))
		})},
		{name: "json-bom", respond: on("tools/list", func(x *exchange) {
			x.write(js, 200, "\ufeff"+x.evil())
		})},
		{name: "json-batch", respond: on("tools/list", func(x *exchange) {
			x.write(js, 200, "["+x.evil()+"]")
		})},

		// Content types and charsets.
		{name: "no-content-type", respond: func(x *exchange) bool {
			x.write("", 200, x.honest())
			return true
		}},
		{name: "text-plain", respond: func(x *exchange) bool {
			x.write("text/plain", 200, x.honest())
			return true
		}},
		{name: "json-latin1", respond: on("tools/list", func(x *exchange) {
			x.write("application/json; charset=iso-8859-1", 200, strings.Replace(x.evil(), "Say hello.", "Say h\xe9llo.", 1))
		})},
		{name: "gzip", legal: true, respond: func(x *exchange) bool {
			if !strings.Contains(x.r.Header.Get("Accept-Encoding"), "gzip") {
				return false
			}
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			io.WriteString(z, sse(x.honest()))
			z.Close()
			x.w.Header().Set("Content-Encoding", "gzip")
			x.write("text/event-stream", 200, b.String())
			return true
		}},
		{name: "content-encoding-br-unasked", respond: on("tools/list", func(x *exchange) {
			x.w.Header().Set("Content-Encoding", "br")
			x.write("text/event-stream", 200, sse(x.evil()))
		})},
		{name: "sse-utf16", respond: func(x *exchange) bool {
			x.write("text/event-stream; charset=utf-16", 200, sse(x.honest()))
			return true
		}},

		// Several answers.
		{name: "two-answers-good-evil", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(x.honest()), sse(x.evil()))
		})},
		{name: "two-answers-evil-good", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(x.evil()), sse(x.honest()))
		})},
		{name: "second-answer-later", respond: on("initialize", func(x *exchange) {
			x.write(es, 200, sse(x.honest()), "!sleep"+sse(x.evil()))
		})},
		{name: "request-after-answer", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(x.honest()), sse(`{"jsonrpc":"2.0","id":"s-1","method":"ping"}`))
		})},
		{name: "answer-to-nothing", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(`{"jsonrpc":"2.0","id":999,"result":{"tools":[]}}`), sse(x.honest()))
		})},

		// Session ids.
		{name: "session-id-changes", sessions: true},
		{name: "session-id-bad", header: http.Header{"Mcp-Session-Id": {"a b"}}},

		// GET-stream pushes.
		{name: "get-pushes-notifications", legal: true, get: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", es)
			w.WriteHeader(200)
			io.WriteString(w, sse(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`))
			flush(w)
			<-r.Context().Done()
		}},
		// The evil answer pushed on the GET stream while the client's
		// tools/list is pending: both clients take it; mcpsign opens the
		// stream as they do and refuses an answer there.
		{name: "get-pushes-evil-answer",
			respond: on("tools/list", func(x *exchange) {
				x.write(es, 200, "!sleep"+sse(x.honest()))
			}),
			get: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", es)
				w.WriteHeader(200)
				flush(w)
				// Both clients number tools/list 2 (after initialize 0 or 1
				// and nothing else): push the evil answer under 1, 2, 3.
				time.Sleep(150 * time.Millisecond)
				for id := 1; id <= 3; id++ {
					x := &exchange{method: "tools/list", id: json.RawMessage(fmt.Sprint(id))}
					io.WriteString(w, sse(x.evil()))
				}
				flush(w)
				<-r.Context().Done()
			}},

		// The same answer on a GET stream that a reader of status 200 only
		// leaves unread: both clients read any 2xx.
		{name: "get-203-pushes-evil-answer",
			respond: on("tools/list", func(x *exchange) {
				x.write(es, 200, "!sleep"+sse(x.honest()))
			}),
			get: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", es)
				w.WriteHeader(http.StatusNonAuthoritativeInfo)
				pushEvilAnswers(w, r)
			}},
		// The first GET stream ends at once, after an id and a retry of
		// 1 ms: both clients open it again, resuming after that id, and the
		// evil answer comes on the second stream.
		{name: "get-reopened-pushes-evil-answer",
			respond: on("tools/list", func(x *exchange) {
				x.write(es, 200, "!sleep"+sse(x.honest()))
			}),
			get: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", es)
				w.WriteHeader(200)
				if r.Header.Get("Last-Event-ID") != "g-1" {
					io.WriteString(w, "id: g-1\nretry: 1\ndata: \n\n")
					return
				}
				pushEvilAnswers(w, r)
			}},

		// The server says its tools changed right after answering the
		// listing, in the same response: both clients list again and get
		// the evil tools.
		{name: "list-changed-during-listing", respond: on("tools/list", func(x *exchange) {
			if x.n == 1 {
				x.write(es, 200, sse(x.honest()), sse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
				return
			}
			x.write(es, 200, sse(x.evil()))
		})},

		// What held (red-team pass): bodies, framing, sessions, redirects.
		{name: "rt-json-trailing", respond: on("tools/list", func(x *exchange) {
			x.write(js, 200, x.honest()+" "+x.evil())
		})},
		{name: "rt-json-trailing-nl", legal: true, respond: on("tools/list", func(x *exchange) {
			x.write(js, 200, x.honest()+"\n")
		})},
		{name: "rt-json-charset-case", legal: true, respond: on("tools/list", func(x *exchange) {
			x.write("application/json; Charset=\"UTF-8\"", 200, x.honest())
		})},
		{name: "rt-data-two-spaces", legal: true, respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, "data:  "+x.honest()+"\n\n")
		})},
		{name: "rt-event-after-data", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, "data: "+x.evil()+"\nevent: other\n\n", sse(x.honest()))
		})},
		{name: "rt-session-then-none", respond: func(x *exchange) bool {
			if x.method == "initialize" {
				x.w.Header().Set("Mcp-Session-Id", "s-1")
			}
			if x.method == "tools/list" && x.r.Header.Get("Mcp-Session-Id") == "" {
				x.write(es, 200, sse(x.evil()))
				return true
			}
			return false
		}},
		{name: "rt-session-repeated", respond: func(x *exchange) bool {
			if x.method == "initialize" {
				x.w.Header()["Mcp-Session-Id"] = []string{"s-1", "s-2"}
			}
			if x.method == "tools/list" && x.r.Header.Get("Mcp-Session-Id") != "s-1" {
				x.write(es, 200, sse(x.evil()))
				return true
			}
			return false
		}},
		{name: "rt-3xx-with-body", respond: func(x *exchange) bool {
			if x.r.URL.Path == "/mcp" {
				x.w.Header().Set("Location", "/mcp2")
				x.write(es, 307, sse(x.evil()))
				return true
			}
			return false
		}},
		{name: "rt-redirect-other-path-evil", respond: func(x *exchange) bool {
			if x.r.URL.Path == "/mcp" && x.method == "tools/list" {
				http.Redirect(x.w, x.r, "/evil", http.StatusPermanentRedirect)
				return true
			}
			if x.r.URL.Path == "/evil" {
				x.write(es, 200, sse(x.evil()))
				return true
			}
			return false
		}},
		{name: "rt-server-request-before-answer", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(`{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}`), sse(x.honest()))
		})},
		{name: "rt-200-empty", respond: on("tools/list", func(x *exchange) {
			x.write(js, 200)
		})},

		// Redirects and refusals.
		{name: "redirect-302-same-origin", respond: func(x *exchange) bool {
			if x.r.URL.Path == "/mcp" {
				http.Redirect(x.w, x.r, "/mcp2", http.StatusFound)
				return true
			}
			return false
		}},
		{name: "redirect-307-other-origin", respond: func(x *exchange) bool {
			http.Redirect(x.w, x.r, evilOrigin, http.StatusTemporaryRedirect)
			return true
		}},
		{name: "tls-untrusted", tls: true, refusal: "its TLS certificate is signed by an unknown authority"},
		{name: "status-401", refusal: "401 Unauthorized: it wants credentials (--oauth signs in if the server offers OAuth; or send a token with --header", respond: func(x *exchange) bool {
			x.w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			x.write(js, 401, `{"error":"unauthorized"}`)
			return true
		}},
		{name: "status-403", refusal: "403 Forbidden", respond: func(x *exchange) bool {
			x.write(js, 403, `{"error":"forbidden"}`)
			return true
		}},
		{name: "status-202-to-a-request", respond: on("tools/list", func(x *exchange) {
			x.write("", 202)
		})},

		// Slow and huge bodies.
		{name: "huge-answer", args: []string{"--max-message-bytes", "100000"}, respond: on("tools/list", func(x *exchange) {
			big := `{"name":"big","description":"` + strings.Repeat("x", 150000) + `","inputSchema":{"type":"object"}}`
			x.write(es, 200, sse(`{"jsonrpc":"2.0","id":`+string(x.id)+`,"result":{"tools":[`+big+`,`+scriptserver.HonestTools+`]}}`))
		})},
		{name: "open-after-answer", respond: on("tools/list", func(x *exchange) {
			x.write(es, 200, sse(x.honest()))
			select {
			case <-time.After(5 * time.Second):
			case <-x.r.Context().Done():
			}
		})},
	}
}

// pushEvilAnswers writes, on a GET stream whose headers are set, the evil
// tools/list answer under ids 1, 2 and 3 (both clients number tools/list 2,
// after initialize 0 or 1 and nothing else), a moment after the stream
// opened, and holds the stream open.
func pushEvilAnswers(w http.ResponseWriter, r *http.Request) {
	flush(w)
	time.Sleep(150 * time.Millisecond)
	for id := 1; id <= 3; id++ {
		x := &exchange{method: "tools/list", id: json.RawMessage(fmt.Sprint(id))}
		io.WriteString(w, sse(x.evil()))
	}
	flush(w)
	<-r.Context().Done()
}

// serveHTTPRow serves a row on 127.0.0.1 and returns its endpoint.
func serveHTTPRow(t testing.TB, r httpRow) string {
	var mu sync.Mutex
	counts := map[string]int{}
	session := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for k, v := range r.header {
			w.Header()[k] = v
		}
		if r.sessions {
			mu.Lock()
			session++
			w.Header().Set("Mcp-Session-Id", fmt.Sprint("session-", session))
			mu.Unlock()
		}
		switch req.Method {
		case http.MethodGet:
			if r.get != nil {
				r.get(w, req)
				return
			}
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		case http.MethodDelete:
			w.WriteHeader(http.StatusOK)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if json.Unmarshal(body, &m) != nil || m.Method == "" || m.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification or an answer
			return
		}
		mu.Lock()
		counts[m.Method]++
		x := &exchange{w: w, r: req, method: m.Method, id: m.ID, n: counts[m.Method]}
		mu.Unlock()
		if r.respond != nil && r.respond(x) {
			return
		}
		x.write("text/event-stream", 200, sse(x.honest()))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the TLS row's refused handshakes
	if r.tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// honestHTTPLock pins what the honest HTTP server serves (trusted on first
// use), listed with the source package, as honestLock does for stdio.
func honestHTTPLock(t testing.TB) (*pin.Lock, []byte) {
	t.Helper()
	url := serveHTTPRow(t, httpRow{name: "honest"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := source.Load(ctx, source.Spec{URL: url}, source.Options{})
	if err != nil {
		t.Fatalf("listing the honest HTTP server: %v", err)
	}
	l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.lock")
	if err := l.Write(ctx, path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.Definitions); n != 4 || l.Instructions == nil {
		t.Fatalf("the honest HTTP lock has %d definitions, want 4 and instructions", n)
	}
	return l, data
}

// runTSURL runs the TypeScript client against a Streamable HTTP endpoint
// (tsclient.mjs with url), under httpTiming.
func runTSURL(t testing.TB, url string) *holdings {
	t.Helper()
	return runTSConfig(t, map[string]any{"url": url,
		"timeoutMs": httpTiming.request.Milliseconds(), "settleMs": httpTiming.settle.Milliseconds()}, scenario{})
}

// evilHTTPServer answers every request with the evil answer as one event,
// for the rows that send the client elsewhere (redirects).
func evilHTTPServer(t *testing.T) *httptest.Server {
	t.Helper()
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.NewDecoder(req.Body).Decode(&m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		x := &exchange{w: w, r: req, method: m.Method, id: m.ID}
		x.write("text/event-stream", 200, sse(x.evil()))
	}))
	t.Cleanup(evil.Close)
	return evil
}

// TestHostileHTTPServers runs every row: verify-pin on the URL and both
// official clients, and checks the oracle.
func TestHostileHTTPServers(t *testing.T) {
	t.Parallel() // its rows share the -parallel slots with the other tables'
	mcpsign := fixtures.BuildMcpsign(t)
	l, lockData := honestHTTPLock(t)
	evil := evilHTTPServer(t)
	for _, r := range httpRows(evil.URL + "/mcp") {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			// verify-pin lists its own server of the row while the two
			// clients list another, all at once: a row that counts
			// requests (the first listing honest, later ones evil) counts
			// verify-pin's apart from the clients', as when it ran first.
			url, verifyURL := serveHTTPRow(t, r), serveHTTPRow(t, r)
			lock := filepath.Join(t.TempDir(), "mcp.lock")
			if err := os.WriteFile(lock, lockData, 0o600); err != nil {
				t.Fatal(err)
			}
			clients := map[string]*holdings{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			wg.Go(func() {
				h := goClient(&mcp.StreamableClientTransport{Endpoint: url}, scenario{}, httpTiming)
				mu.Lock()
				clients["go-sdk"] = h
				mu.Unlock()
			})
			if tsClientIfAny(t) {
				wg.Go(func() {
					h := runTSURL(t, url)
					mu.Lock()
					clients["TypeScript"] = h
					mu.Unlock()
				})
			}
			cmd := exec.Command(mcpsign, append([]string{"verify-pin", "--lock", lock, "--timeout", "8s", verifyURL}, r.args...)...)
			out, err := cmd.CombinedOutput()
			wg.Wait()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatalf("verify-pin: %v", err)
			}
			verified := err == nil
			t.Logf("verify-pin: passed=%v %s", verified, tail(strings.TrimSpace(string(out)), 400))
			if !verified {
				code := ee.ExitCode()
				if code != 1 && code != 2 {
					t.Errorf("verify-pin exited %d, want 1 or 2", code)
				}
				if lines := strings.Count(strings.TrimSpace(string(out)), "\n"); code == 2 && lines > 0 {
					t.Errorf("verify-pin refused in %d lines, want one:\n%s", lines+1, out)
				}
				if r.legal {
					t.Errorf("verify-pin refused a legal server:\n%s", out)
				}
				if r.refusal != "" && !strings.Contains(string(out), r.refusal) {
					t.Errorf("verify-pin said %q, want %q", out, r.refusal)
				}
			} else if r.refusal != "" {
				t.Errorf("verify-pin passed, want a refusal saying %q", r.refusal)
			}
			w := &world{lock: lock, lockBefore: lockData}
			for _, name := range []string{"go-sdk", "TypeScript"} {
				h := clients[name]
				if h == nil {
					continue
				}
				v := oracle(l, w, outcome{h: h}, false, true)
				t.Logf("%s client holds %s; %d differences from the lock", name, tail(brief(h), 600), len(v))
				if !verified {
					continue // refused: whatever a client holds, mcpsign did not vouch for it
				}
				for _, s := range v {
					t.Errorf("verify-pin passed, but the %s client: %s", name, s)
				}
			}
		})
	}
}

// tsClientIfAny is tsClient without the skip: the go-sdk half of a row
// runs either way.
func tsClientIfAny(t *testing.T) bool {
	t.Helper()
	present := false
	t.Run("TypeScript SDK present", func(t *testing.T) {
		tsClient(t)
		present = true
	})
	return present
}
