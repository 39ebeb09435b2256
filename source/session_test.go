package source

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
)

// rawRequest is a request as a scripted server sees it.
type rawRequest struct {
	ID     json.RawMessage            `json:"id"`
	Method string                     `json:"method"`
	Params map[string]json.RawMessage `json:"params"`
}

// script answers one request with zero or more raw lines; {{id}} in a line
// is replaced by the request's id.
type script func(req rawRequest) []string

// scriptedConn returns a client connection to a scripted server that writes
// exactly the bytes its script returns. The requests it saw are returned
// too.
func scriptedConn(t *testing.T, sc script) (wire, func() []rawRequest) {
	t.Helper()
	toClient, serverOut := io.Pipe()
	serverIn, fromClient := io.Pipe()
	var mu sync.Mutex
	var seen []rawRequest
	done := make(chan struct{})
	// Writes go through a queue, as through an OS pipe's buffer, so that the
	// script can send several messages while the client is writing.
	out := make(chan string, 100)
	go func() {
		defer serverOut.Close()
		for line := range out {
			if _, err := io.WriteString(serverOut, line); err != nil {
				for range out {
				}
				return
			}
		}
	}()
	go func() {
		defer close(done)
		defer close(out)
		r := bufio.NewReader(serverIn)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req rawRequest
			if err := json.Unmarshal(line, &req); err != nil {
				t.Errorf("scripted server: bad request %q: %v", line, err)
				return
			}
			mu.Lock()
			seen = append(seen, req)
			mu.Unlock()
			for _, line := range sc(req) {
				out <- strings.ReplaceAll(line, "{{id}}", string(req.ID)) + "\n"
			}
		}
	}()
	stopping := make(chan struct{})
	conn := newStdioWire(toClient, fromClient, DefaultMaxMessageBytes, stopping)
	t.Cleanup(func() {
		close(stopping)
		fromClient.Close()
		toClient.Close()
		serverIn.Close()
		<-done
	})
	return conn, func() []rawRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]rawRequest(nil), seen...)
	}
}

// runSession runs a session over conn with opts.
func runSession(t *testing.T, conn wire, opts Options) (*digest.Snapshot, error) {
	t.Helper()
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, _, stop := withLimits(context.Background(), &o)
	defer stop()
	return (&session{w: conn, o: &o}).run(ctx)
}

func result(body string) string { return `{"jsonrpc":"2.0","id":{{id}},"result":` + body + `}` }
func rpcError(code int, msg string) string {
	m, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":{{id}},"error":{"code":%d,"message":%s}}`, code, m)
}

const legacyInit = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{}},` +
	`"serverInfo":{"name":"scripted","version":"1.2.3"},"instructions":"Use it \u00e9 well."}`

// answerAs answers server/discover under the raw id given instead of the
// request's own.
func answerAs(id string) script {
	return func(req rawRequest) []string {
		return []string{`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"no"}}`}
	}
}

// legacyWith is legacy with the initialize result given.
func legacyWith(init string, lists map[string][]string) script {
	inner := legacy(lists)
	return func(req rawRequest) []string {
		if req.Method == "initialize" {
			return []string{result(init)}
		}
		return inner(req)
	}
}

// legacy wraps a tools/prompts/templates script with the initialize
// handshake of a server that does not know server/discover.
func legacy(lists map[string][]string) script {
	return func(req rawRequest) []string {
		switch req.Method {
		case "server/discover":
			return []string{rpcError(-32601, "Method not found")}
		case "initialize":
			return []string{result(legacyInit)}
		case "notifications/initialized":
			return nil
		}
		if pages, ok := lists[req.Method]; ok {
			cursor := ""
			if c, ok := req.Params["cursor"]; ok {
				json.Unmarshal(c, &cursor)
			}
			page := 0
			fmt.Sscanf(cursor, "p%d", &page)
			if page < len(pages) {
				return []string{pages[page]}
			}
			return []string{rpcError(-32602, "bad cursor")}
		}
		return []string{rpcError(-32601, "Method not found")}
	}
}

// Raw definitions whose bytes must survive exactly: unknown members
// (execution), odd spacing, escapes, invalid UTF-8.
const (
	toolA = `{"name":"a", "description":"first \u00e9\ud83d\ude00","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"},"_meta":{"x":1}}`
	toolB = "{\"name\":\"b\",\"description\":\"bad \xff byte\",\"inputSchema\":{ \"type\" : \"object\" }}"
	toolC = `{"name":"c","description":"lone \udc00","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1.0e2}}}}`
)

func TestSessionLegacyPaginatedRawBytes(t *testing.T) {
	conn, seen := scriptedConn(t, legacy(map[string][]string{
		"tools/list": {
			result(`{"tools":[` + toolA + `],"nextCursor":"p1"}`),
			result(`{"tools":[` + toolB + `, ` + toolC + `],"nextCursor":"p2"}`),
			result(`{"tools":[]}`),
		},
		"prompts/list":             {result(`{"prompts":[{"name":"p","arguments":[]}]}`)},
		"resources/templates/list": {rpcError(-32601, "Method not found")},
	}))
	var progress []string
	snap, err := runSession(t, conn, Options{Progress: func(stage string, page int) {
		progress = append(progress, fmt.Sprintf("%s#%d", stage, page))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if snap.ProtocolVersion != "2025-11-25" || snap.Server.Name != "scripted" || snap.Server.Version != "1.2.3" {
		t.Errorf("server %+v, protocol %q", snap.Server, snap.ProtocolVersion)
	}
	if snap.Instructions == nil || *snap.Instructions != "Use it é well." {
		t.Errorf("instructions = %v", snap.Instructions)
	}
	for i, want := range []string{toolA, toolB, toolC} {
		if i >= len(snap.Tools) || string(snap.Tools[i]) != want {
			t.Fatalf("tool %d = %q, want the exact bytes %q", i, snap.Tools, want)
		}
	}
	if len(snap.Prompts) != 1 || len(snap.ResourceTemplates) != 0 || snap.ResourceTemplates == nil {
		t.Errorf("prompts %q, templates %q", snap.Prompts, snap.ResourceTemplates)
	}
	if want := "initialize#0 tools/list#1 tools/list#2 tools/list#3 prompts/list#1 resources/templates/list#1"; strings.Join(progress, " ") != want {
		t.Errorf("progress = %s, want %s", strings.Join(progress, " "), want)
	}
	var methods []string
	for _, r := range seen() {
		methods = append(methods, r.Method)
		if r.Method == "tools/list" {
			if _, ok := r.Params["_meta"]; ok {
				t.Errorf("legacy tools/list carries _meta: %v", r.Params)
			}
		}
	}
	if want := "server/discover initialize notifications/initialized tools/list tools/list tools/list prompts/list resources/templates/list"; strings.Join(methods, " ") != want {
		t.Errorf("methods = %s, want %s", strings.Join(methods, " "), want)
	}
	if s := snap.CapturedAt; s.IsZero() || s.Location() != time.UTC || time.Since(s) > time.Minute {
		t.Errorf("capturedAt = %v", s)
	}
	// The snapshot file round trip keeps the same bytes, hence the same digests.
	file, err := snap.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	back, err := digest.ParseSnapshot(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := range snap.Tools {
		if string(back.Tools[i]) != string(snap.Tools[i]) {
			t.Errorf("round trip changed tool %d: %q", i, back.Tools[i])
		}
	}
}

func TestSessionModern(t *testing.T) {
	const discover = `{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},` +
		`"instructions":"modern","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"9"}}}`
	conn, seen := scriptedConn(t, func(req rawRequest) []string {
		switch req.Method {
		case "server/discover":
			return []string{result(discover)}
		case "tools/list":
			if _, ok := req.Params["cursor"]; ok {
				return []string{result(`{"resultType":"complete","tools":[` + toolC + `],"ttlMs":60000,"cacheScope":"shared"}`)}
			}
			return []string{result(`{"resultType":"complete","tools":[` + toolA + `],"nextCursor":"next","ttlMs":60000,"cacheScope":"shared"}`)}
		}
		return []string{rpcError(-32601, "Method not found")}
	})
	snap, err := runSession(t, conn, Options{ClientName: "tester", ClientVersion: "0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.ProtocolVersion != ProtocolModern || snap.Server.Name != "m" || snap.Server.Version != "9" ||
		snap.Instructions == nil || *snap.Instructions != "modern" || len(snap.Tools) != 2 || len(snap.Prompts) != 0 {
		t.Fatalf("snapshot %+v", snap)
	}
	reqs := seen()
	if len(reqs) != 3 {
		t.Fatalf("requests %+v", reqs)
	}
	for _, r := range reqs {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(r.Params["_meta"], &meta); err != nil {
			t.Fatalf("%s without _meta: %v", r.Method, err)
		}
		if string(meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` ||
			string(meta["io.modelcontextprotocol/clientInfo"]) != `{"name":"tester","version":"0.1"}` ||
			string(meta["io.modelcontextprotocol/clientCapabilities"]) != DefaultClientCapabilities {
			t.Errorf("%s _meta = %s", r.Method, r.Params["_meta"])
		}
	}
}

// TestSessionErrors: each misbehavior gives its documented error.
func TestSessionErrors(t *testing.T) {
	bigTool := `{"name":"big","description":"` + strings.Repeat("x", 4096) + `"}`
	tests := []struct {
		name  string
		sc    script
		opts  Options
		is    error  // errors.Is target, if any
		stage string // the StageError's stage
		page  int
		msg   string // substring of the message
	}{
		{
			name: "cursor loop",
			sc: legacy(map[string][]string{"tools/list": {
				result(`{"tools":[],"nextCursor":"p1"}`),
				result(`{"tools":[],"nextCursor":"p2"}`),
				result(`{"tools":[],"nextCursor":"p1"}`),
			}}),
			is: ErrCursorLoop, stage: "tools/list", page: 3,
			msg: `tools/list page 3: cursor "p1" repeated (cursor loop)`,
		},
		{
			name: "empty cursor is the first page again",
			sc: legacy(map[string][]string{"tools/list": {
				result(`{"tools":[],"nextCursor":""}`),
			}}),
			is: ErrCursorLoop, stage: "tools/list", page: 1, msg: `cursor "" repeated`,
		},
		{
			name: "non-string cursor",
			sc:   legacy(map[string][]string{"tools/list": {result(`{"tools":[],"nextCursor":5}`)}}),
			is:   ErrProtocol, stage: "tools/list", page: 1, msg: "nextCursor is not a string",
		},
		{
			name: "instructions in another case",
			sc: legacyWith(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"},`+
				`"instructions":"<evil>","INSTRUCTIONS":"Be helpful."}`, nil),
			is: ErrProtocol, stage: "initialize", msg: `member "INSTRUCTIONS" would be read as "instructions"`,
		},
		{
			name: "serverInfo name in another case",
			sc:   legacyWith(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","NAME":"t"}}`, nil),
			is:   ErrProtocol, stage: "initialize", msg: `member "NAME" would be read as "name"`,
		},
		{
			name: "Tools beside tools",
			sc:   legacy(map[string][]string{"tools/list": {result(`{"tools":[],"Tools":[` + toolA + `]}`)}}),
			is:   ErrProtocol, stage: "tools/list", page: 1, msg: `member "Tools" would be read as "tools"`,
		},
		{
			name: "answer under id 1.0 (go-sdk reads 1)",
			sc:   answerAs("1.0"),
			is:   ErrProtocol, stage: "initialize", msg: "a response with id 1.0 answers no pending request (the TypeScript SDK and go-sdk would take it for the answer to request 1)",
		},
		{
			name: "answer under id 1e0",
			sc:   answerAs("1e0"),
			is:   ErrProtocol, stage: "initialize", msg: "the TypeScript SDK and go-sdk would take it for the answer to request 1",
		},
		{
			name: "answer under id \"1\" (the TypeScript SDK reads 1)",
			sc:   answerAs(`"1"`),
			is:   ErrProtocol, stage: "initialize", msg: "the TypeScript SDK would take it for the answer to request 1",
		},
		{
			name: "answer under id 1.5 (go-sdk truncates)",
			sc:   answerAs("1.5"),
			is:   ErrProtocol, stage: "initialize", msg: "(go-sdk would take it for the answer to request 1)",
		},
		{
			name: "white space after a message",
			sc: func(req rawRequest) []string {
				return []string{rpcError(-32601, "Method not found") + "  "}
			},
			is: ErrProtocol, stage: "initialize", msg: "white space after the message",
		},
		{
			name: "listing over its byte budget",
			sc: legacy(map[string][]string{"tools/list": {
				result(`{"tools":[` + toolA + `],"nextCursor":"p1"}`),
				result(`{"tools":[` + toolA + `],"nextCursor":"p2"}`),
			}}),
			opts: Options{MaxListingBytes: 200},
			is:   ErrListingTooLarge, stage: "tools/list", page: 2, msg: "more than 200 bytes",
		},
		{
			name: "duplicate member in a list result",
			sc:   legacy(map[string][]string{"tools/list": {result(`{"tools":[],"tools":[` + toolA + `]}`)}}),
			is:   ErrProtocol, stage: "tools/list", page: 1, msg: `repeated result member "tools"`,
		},
		{
			name: "too many pages",
			sc: legacy(map[string][]string{"tools/list": {
				result(`{"tools":[],"nextCursor":"p1"}`),
				result(`{"tools":[],"nextCursor":"p2"}`),
				result(`{"tools":[],"nextCursor":"p3"}`),
			}}),
			opts: Options{MaxPages: 3},
			is:   ErrTooManyPages, stage: "tools/list", page: 3, msg: "at most 3 pages",
		},
		{
			name: "oversized result",
			sc:   legacy(map[string][]string{"tools/list": {result(`{"tools":[` + bigTool + `]}`)}}),
			opts: Options{MaxMessageBytes: 1024},
			is:   ErrMessageTooLarge, stage: "tools/list", page: 1, msg: "more than 1024",
		},
		{
			name: "never answers",
			sc:   func(rawRequest) []string { return nil },
			opts: Options{Timeout: 200 * time.Millisecond},
			is:   ErrTimeout, stage: "initialize", msg: "initialize: timeout: no complete answer within 200ms",
		},
		{
			name: "error answer on page 2",
			sc:   legacy(map[string][]string{"tools/list": {result(`{"tools":[],"nextCursor":"p9"}`)}}),
			// A bound for a hang only (300 ms ran out on a loaded machine
			// before the three answers were read).
			opts: Options{Timeout: 10 * time.Second},
			// p9 is past the script's pages: answered with an error instead
			stage: "tools/list", page: 2, msg: "server answered tools/list with error -32602",
		},
		{
			name:  "error answer",
			sc:    legacy(map[string][]string{"tools/list": {rpcError(-32603, "boom\x1b[31m")}}),
			stage: "tools/list", page: 1, msg: "server answered tools/list with error -32603: \"boom\x1b[31m\"", // raw: escaped where printed
		},
		{
			name: "response to a request never sent",
			sc: func(req rawRequest) []string {
				return []string{`{"jsonrpc":"2.0","id":77,"result":{}}`}
			},
			is: ErrProtocol, stage: "initialize", msg: "a response with id 77 answers no pending request",
		},
		{
			name: "not JSON",
			sc:   func(rawRequest) []string { return []string{"hello, I am a log line"} },
			is:   ErrProtocol, stage: "initialize", msg: "initialize: protocol error",
		},
		{
			name: "wrong jsonrpc version",
			sc:   func(rawRequest) []string { return []string{`{"jsonrpc":"1.0","id":{{id}},"result":{}}`} },
			is:   ErrProtocol, stage: "initialize", msg: `jsonrpc is not "2.0"`,
		},
		{
			name: "neither result nor error",
			sc:   func(rawRequest) []string { return []string{`{"jsonrpc":"2.0","id":{{id}}}`} },
			is:   ErrProtocol, stage: "initialize", msg: "neither a request nor a response",
		},
		{
			name: "unsupported protocol version",
			sc: func(req rawRequest) []string {
				if req.Method == "initialize" {
					return []string{result(`{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"x","version":"1"}}`)}
				}
				return []string{rpcError(-32601, "Method not found")}
			},
			is: ErrProtocol, stage: "initialize", msg: `server chose protocol version "1999-01-01"`,
		},
		{
			name: "instructions with a lone surrogate",
			sc: func(req rawRequest) []string {
				if req.Method == "initialize" {
					return []string{result(`{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"x","version":"1"},"instructions":"a\ud800b"}`)}
				}
				return []string{rpcError(-32601, "Method not found")}
			},
			is: ErrProtocol, stage: "initialize", msg: "instructions",
		},
		{
			name:  "forced modern on a legacy server",
			sc:    legacy(nil),
			opts:  Options{ProtocolVersion: ProtocolModern},
			stage: "initialize", msg: "server/discover (protocol 2026-07-28 forced): server answered server/discover with error -32601",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, _ := scriptedConn(t, tt.sc)
			start := time.Now()
			snap, err := runSession(t, conn, tt.opts)
			if err == nil {
				t.Fatalf("no error; %d tools", len(snap.Tools))
			}
			var se *StageError
			if !errors.As(err, &se) || se.Stage != tt.stage || se.Page != tt.page {
				t.Errorf("error %q (%T) is not a StageError at %s page %d", err, err, tt.stage, tt.page)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestSessionAnswersServerRequests: a ping from the server mid-listing is
// answered, other requests get "method not found", notifications are
// skipped, and the listing goes on.
func TestSessionAnswersServerRequests(t *testing.T) {
	var mu sync.Mutex
	var answers []string
	conn, _ := scriptedConn(t, func(req rawRequest) []string {
		switch req.Method {
		case "initialize":
			return []string{result(`{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}`)}
		case "tools/list":
			return []string{
				`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`,
				`{"jsonrpc":"2.0","id":"s1","method":"ping"}`,
				`{"jsonrpc":"2.0","id":"s2","method":"roots/list"}`,
				result(`{"tools":[` + toolA + `]}`),
			}
		case "":
			mu.Lock()
			answers = append(answers, string(req.ID))
			mu.Unlock()
			return nil
		case "notifications/initialized":
			return nil
		}
		return []string{rpcError(-32601, "Method not found")}
	})
	snap, err := runSession(t, conn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.ProtocolVersion != "2025-03-26" || len(snap.Tools) != 1 {
		t.Errorf("snapshot %+v", snap)
	}
	// The script reads the answers asynchronously.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := strings.Join(answers, ",")
		mu.Unlock()
		if got == `"s1","s2"` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("answers to %s, want s1 and s2", got)
		}
	}
}

// inMemory runs a session against a go-sdk server in the same process.
func inMemory(t *testing.T, srv *mcp.Server, opts Options) (*digest.Snapshot, error) {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return runSession(t, &sdkWire{conn: conn}, opts)
}

// newSDKServer builds a go-sdk server with n tools and prompts, one
// template, instructions, and the given page size and versions.
func newSDKServer(n, pageSize int, versions ...string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk-server", Version: "3.1"}, &mcp.ServerOptions{
		Instructions:              "sdk instructions",
		PageSize:                  pageSize,
		SupportedProtocolVersions: versions,
	})
	for i := range n {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool%02d", i), Description: "a tool", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		srv.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("prompt%02d", i)},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "t", URITemplate: "x://{id}"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
	return srv
}

func TestSessionGoSDKServer(t *testing.T) {
	tests := []struct {
		name     string
		versions []string
		force    string
		want     string
	}{
		{name: "modern", want: "2026-07-28"},
		{name: "legacy only", versions: []string{"2025-11-25", "2025-06-18"}, want: "2025-11-25"},
		{name: "forced 2025-06-18", force: "2025-06-18", want: "2025-06-18"},
		{name: "forced 2024-11-05", force: "2024-11-05", want: "2024-11-05"},
		{name: "forced modern", force: ProtocolModern, want: "2026-07-28"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := inMemory(t, newSDKServer(7, 2, tt.versions...), Options{ProtocolVersion: tt.force})
			if err != nil {
				t.Fatal(err)
			}
			if snap.ProtocolVersion != tt.want {
				t.Errorf("protocol %q, want %q", snap.ProtocolVersion, tt.want)
			}
			if len(snap.Tools) != 7 || len(snap.Prompts) != 7 || len(snap.ResourceTemplates) != 1 {
				t.Errorf("counts %d %d %d", len(snap.Tools), len(snap.Prompts), len(snap.ResourceTemplates))
			}
			if snap.Server != (digest.ServerInfo{Name: "sdk-server", Version: "3.1"}) {
				t.Errorf("server %+v", snap.Server)
			}
			if snap.Instructions == nil || *snap.Instructions != "sdk instructions" {
				t.Errorf("instructions %v", snap.Instructions)
			}
			if r := digest.Compute(snap); r.Err() != nil || len(r.Sets) != 3 {
				t.Errorf("digests: %v, sets %v", r.Err(), r.Sets)
			}
		})
	}
}

// TestSessionListChanged: a list_changed while the server is listed lists
// it again (the clients hold the second answer); a server that says so in
// every listing is refused.
func TestSessionListChanged(t *testing.T) {
	t.Parallel()
	const changed = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	listings := func(always bool) script {
		n := 0
		inner := legacy(map[string][]string{
			"prompts/list":             {result(`{"prompts":[]}`)},
			"resources/templates/list": {result(`{"resourceTemplates":[]}`)},
			"resources/list":           {result(`{"resources":[]}`)},
		})
		return func(req rawRequest) []string {
			if req.Method != "tools/list" {
				return inner(req)
			}
			n++
			if n == 1 || always {
				return []string{result(`{"tools":[` + toolA + `]}`), changed}
			}
			return []string{result(`{"tools":[` + toolC + `]}`)}
		}
	}
	conn, seen := scriptedConn(t, listings(false))
	snap, err := runSession(t, conn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tools) != 1 || !strings.Contains(string(snap.Tools[0]), `"name":"c"`) {
		t.Errorf("holds %s, want the second listing's tool c", snap.Tools)
	}
	lists := 0
	for _, r := range seen() {
		if r.Method == "tools/list" {
			lists++
		}
	}
	if lists != 2 {
		t.Errorf("listed tools %d times, want 2", lists)
	}

	conn, _ = scriptedConn(t, listings(true))
	if _, err := runSession(t, conn, Options{}); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "during each of 4 listings") {
		t.Errorf("a server that always changes: %v", err)
	}
}
