package difftest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/difftest/scriptserver"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// holdings is what a client ends up holding, the one JSON line both clients
// print (testdata/npm/tsclient.mjs). A nil list: never listed successfully.
type holdings struct {
	Instructions      *string           `json:"instructions"`
	Tools             []json.RawMessage `json:"tools"`
	Prompts           []json.RawMessage `json:"prompts"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
	// Resources are listed only when the scenario asks for them.
	Resources []json.RawMessage `json:"resources"`
	Calls     []callResult      `json:"calls"`
	Errors    []requestError    `json:"errors"`
	Hung      []string          `json:"hung"`
	// ExitCode is the proxy's exit status (nil: it did not exit, or ran in
	// process); Stderr the end of its stderr.
	ExitCode *int   `json:"exitCode"`
	Stderr   string `json:"stderr"`
}

type callResult struct {
	Name      string `json:"name"`
	OK        bool   `json:"ok"`
	ErrorCode *int   `json:"errorCode"`
	Hung      bool   `json:"hung,omitempty"`
}

type requestError struct {
	Method  string `json:"method"`
	Code    *int   `json:"code"`
	Message string `json:"message"`
}

// scenario is what a client does after it connected and listed everything.
type scenario struct {
	Call      *toolCall `json:"call,omitempty"`
	Pipeline  bool      `json:"pipeline,omitempty"`
	AfterCall *toolCall `json:"afterCall,omitempty"`
	// Resources: the client lists the static resources too (and again on
	// notifications/resources/list_changed).
	Resources bool `json:"resources,omitempty"`
}

type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// The clients' hard timeout per request and how long they wait for things
// to settle (notifications, re-listings) after a call, in the table.
const (
	requestTimeout = 3 * time.Second * raceSlowdown
	settleTime     = 300 * time.Millisecond
)

// timing is a client's request timeout and settle time.
type timing struct{ request, settle time.Duration }

var tableTiming = timing{request: requestTimeout, settle: settleTime}

// tsClient skips (fails under MCPSIGN_REQUIRE_E2E=1) when node or the
// TypeScript SDK of testdata/npm is missing, as the e2e tests do.
func tsClient(t testing.TB) {
	t.Helper()
	fixtures.Node(t)
	sdk := filepath.Join(fixtures.NPMDir(t), "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if _, err := os.Stat(sdk); err != nil {
		fixtures.MissingE2E(t, "@modelcontextprotocol/sdk is not installed (%v)", err)
	}
}

// runTS runs a TypeScript client session against argv (the proxy's
// command line), in the test process's one Node.js process
// (fixtures.TSClientSession).
func runTS(t testing.TB, argv []string, sc scenario) *holdings {
	t.Helper()
	return runTSConfig(t, map[string]any{"command": argv[0], "args": argv[1:]}, sc)
}

// runTSConfig runs the TypeScript client with cfg (command and args, or
// url) and the scenario.
func runTSConfig(t testing.TB, cfg map[string]any, sc scenario) *holdings {
	t.Helper()
	cfg["call"], cfg["pipeline"], cfg["afterCall"], cfg["resources"] = sc.Call, sc.Pipeline, sc.AfterCall, sc.Resources
	if _, ok := cfg["timeoutMs"]; !ok {
		cfg["timeoutMs"], cfg["settleMs"] = requestTimeout.Milliseconds(), settleTime.Milliseconds()
	}
	stdout := fixtures.TSClientSession(t, cfg, 40*time.Second)
	var h holdings
	if err := json.Unmarshal(stdout, &h); err != nil {
		t.Fatalf("TypeScript client output %q: %v", stdout, err)
	}
	return &h
}

// rawConn wraps go-sdk's connection to keep the raw result of the first
// answer to each of its requests, matched as go-sdk matches them (by its
// decoded jsonrpc.ID): its typed mcp.Tool drops unknown members.
type rawConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]string // request id → method
	last    map[string]json.RawMessage
}

func (c *rawConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.ID.IsValid() {
		c.mu.Lock()
		c.pending[r.ID] = r.Method
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, m)
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		if method, ok := c.pending[r.ID]; ok {
			delete(c.pending, r.ID)
			if r.Error == nil {
				c.last[method] = r.Result
			}
		}
		c.mu.Unlock()
	}
	return m, err
}

// lastResult is the raw result of the last answer to a request of method.
func (c *rawConn) lastResult(method string) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[method]
}

type rawTransport struct {
	mcp.Transport
	conn *rawConn
}

func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &rawConn{Connection: c, pending: map[jsonrpc.ID]string{}, last: map[string]json.RawMessage{}}
	return t.conn, nil
}

// goClient runs the go-sdk client over transport, as the TypeScript client
// does, and returns what it holds (ExitCode left to the caller).
func goClient(transport mcp.Transport, sc scenario, tm timing) *holdings {
	h := &holdings{}
	var mu sync.Mutex // guards h against the list_changed handlers
	rt := &rawTransport{Transport: transport}

	// do runs one request under the hard timeout.
	do := func(method string, f func(ctx context.Context) error) bool {
		ctx, cancel := context.WithTimeout(context.Background(), tm.request)
		defer cancel()
		err := f(ctx)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			return true
		case errors.Is(err, context.DeadlineExceeded):
			h.Hung = append(h.Hung, method)
		default:
			h.Errors = append(h.Errors, requestError{Method: method, Code: errorCode(err), Message: err.Error()})
		}
		return false
	}

	var cs *mcp.ClientSession
	// The re-listings list_changed started and not yet done. Not a
	// WaitGroup: a list_changed may start one while settle waits, and a
	// WaitGroup's Add from zero must not race its Wait.
	var (
		relistMu  sync.Mutex
		relistsOn int
	)
	relistDone := sync.NewCond(&relistMu)
	var listKind func(kind string)
	listKind = func(kind string) {
		var items []json.RawMessage
		var method, member, key string
		var cursor string
		for page := 0; page < 100; page++ {
			var names map[string]bool
			var next string
			ok := do(kindMethod(kind), func(ctx context.Context) error {
				names = map[string]bool{}
				switch kind {
				case "tools":
					method, member, key = "tools/list", "tools", "name"
					r, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
					if err != nil {
						return err
					}
					for _, x := range r.Tools {
						names[x.Name] = true
					}
					next = r.NextCursor
				case "prompts":
					method, member, key = "prompts/list", "prompts", "name"
					r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
					if err != nil {
						return err
					}
					for _, x := range r.Prompts {
						names[x.Name] = true
					}
					next = r.NextCursor
				case "resources":
					method, member, key = "resources/list", "resources", "uri"
					r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
					if err != nil {
						return err
					}
					for _, x := range r.Resources {
						names[x.URI] = true
					}
					next = r.NextCursor
				default:
					method, member, key = "resources/templates/list", "resourceTemplates", "uriTemplate"
					r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
					if err != nil {
						return err
					}
					for _, x := range r.ResourceTemplates {
						names[x.URITemplate] = true
					}
					next = r.NextCursor
				}
				return nil
			})
			if !ok {
				return
			}
			items = append(items, rawItems(rt.conn.lastResult(method), member, key, names)...)
			if next == "" {
				mu.Lock()
				switch kind {
				case "tools":
					h.Tools = nonNil(items)
				case "prompts":
					h.Prompts = nonNil(items)
				case "resources":
					h.Resources = nonNil(items)
				default:
					h.ResourceTemplates = nonNil(items)
				}
				mu.Unlock()
				return
			}
			cursor = next
		}
	}
	relist := func(kind string) {
		relistMu.Lock()
		relistsOn++
		relistMu.Unlock()
		go func() {
			defer func() {
				relistMu.Lock()
				relistsOn--
				relistDone.Broadcast()
				relistMu.Unlock()
			}()
			listKind(kind)
		}()
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpsign-difftest-go", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { relist("tools") },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { relist("prompts") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			relist("resourceTemplates")
			if sc.Resources {
				relist("resources")
			}
		},
	})
	if !do("initialize", func(ctx context.Context) error {
		var err error
		cs, err = client.Connect(ctx, rt, &mcp.ClientSessionOptions{ProtocolVersion: scriptserver.ProtocolVersion})
		return err
	}) {
		return h
	}
	defer cs.Close()
	if ir := cs.InitializeResult(); ir != nil && ir.Instructions != "" {
		instr := ir.Instructions
		h.Instructions = &instr
	}
	caps := cs.InitializeResult().Capabilities
	if caps != nil && caps.Tools != nil {
		listKind("tools")
	}
	if caps != nil && caps.Prompts != nil {
		listKind("prompts")
	}
	if caps != nil && caps.Resources != nil {
		listKind("resourceTemplates")
		if sc.Resources {
			listKind("resources")
		}
	}
	call := func(c *toolCall) {
		res := callResult{Name: c.Name}
		ok := do("tools/call", func(ctx context.Context) error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.Name, Arguments: c.Arguments})
			if err != nil {
				res.ErrorCode = errorCode(err)
				if errors.Is(err, context.DeadlineExceeded) {
					res.Hung = true
				}
			}
			return err
		})
		res.OK = ok
		mu.Lock()
		h.Calls = append(h.Calls, res)
		mu.Unlock()
	}
	settle := func() {
		time.Sleep(tm.settle)
		done := make(chan struct{})
		go func() {
			relistMu.Lock()
			for relistsOn > 0 {
				relistDone.Wait()
			}
			relistMu.Unlock()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(4 * tm.request):
			mu.Lock()
			h.Hung = append(h.Hung, "list_changed re-listing")
			mu.Unlock()
		}
	}
	switch {
	case sc.Pipeline && sc.Call != nil:
		var wg sync.WaitGroup
		// The listing first, then the call while it is in flight, as
		// the TypeScript client's Promise.all sends them.
		wg.Go(func() { listKind("tools") })
		time.Sleep(50 * time.Millisecond)
		wg.Go(func() { call(sc.Call) })
		wg.Wait()
	case sc.Call != nil:
		call(sc.Call)
	}
	settle()
	if sc.AfterCall != nil {
		call(sc.AfterCall)
		settle()
	}
	// What the client holds once settled: a re-listing that a late
	// list_changed starts (or one settle gave up on) writes only to h, not
	// to what the caller reads.
	mu.Lock()
	defer mu.Unlock()
	held := *h
	return &held
}

func kindMethod(kind string) string {
	switch kind {
	case "tools":
		return "tools/list"
	case "prompts":
		return "prompts/list"
	case "resources":
		return "resources/list"
	}
	return "resources/templates/list"
}

func nonNil(items []json.RawMessage) []json.RawMessage {
	if items == nil {
		return []json.RawMessage{}
	}
	return items
}

// rawItems returns the raw definitions of a list result that the typed
// result kept (keys in names).
func rawItems(result json.RawMessage, member, key string, names map[string]bool) []json.RawMessage {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(r[member], &items) != nil {
		return nil
	}
	var kept []json.RawMessage
	for _, it := range items {
		var k map[string]any
		if json.Unmarshal(it, &k) != nil {
			continue
		}
		if s, ok := k[key].(string); ok && names[s] {
			kept = append(kept, it)
		}
	}
	return kept
}

// errorCode is the JSON-RPC error code of err, if it carries one.
func errorCode(err error) *int {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		c := int(we.Code)
		return &c
	}
	return nil
}
