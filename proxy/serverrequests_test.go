package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// The rule for what the server asks of the client (docs/PROXY.md, "What the
// server asks of the client"), apart from I/O.
func TestServerCallRefusal(t *testing.T) {
	all := ServerRequests{DenySampling: true, DenyElicitation: true, DenyRoots: true, DenyLogging: true}
	const every = `{"elicitation":{},"roots":{"listChanged":true},"sampling":{}}`
	for _, tc := range []struct {
		name   string
		policy ServerRequests
		caps   string // "" for unknown
		msg    string
		refuse bool
	}{
		{"sampling announced", ServerRequests{}, every, `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`, false},
		{"sampling not announced", ServerRequests{}, `{"roots":{}}`, `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`, true},
		{"sampling denied", ServerRequests{DenySampling: true}, every, `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`, true},
		{"sampling as a notification", ServerRequests{}, every, `{"jsonrpc":"2.0","method":"sampling/createMessage","params":{}}`, true},
		{"capabilities unknown", ServerRequests{}, "", `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`, true},
		{"roots announced", ServerRequests{}, every, `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`, false},
		{"roots denied", ServerRequests{DenyRoots: true}, every, `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`, true},
		{"roots not announced", ServerRequests{}, `{}`, `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`, true},
		{"elicitation form, {} announced", ServerRequests{}, every, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m"}}`, false},
		{"elicitation without params: form", ServerRequests{}, every, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create"}`, false},
		{"elicitation url, {} announced", ServerRequests{}, every, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"url","url":"https://x"}}`, true},
		{"elicitation url announced", ServerRequests{}, `{"elicitation":{"url":{}}}`, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"url","url":"https://x"}}`, false},
		{"elicitation form, only url announced", ServerRequests{}, `{"elicitation":{"url":{}}}`, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m"}}`, true},
		{"elicitation mode repeated", ServerRequests{}, `{"elicitation":{"form":{}}}`, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"form","mode":"url"}}`, true},
		{"elicitation denied", ServerRequests{DenyElicitation: true}, every, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m"}}`, true},
		{"logging relayed", ServerRequests{}, "", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`, false},
		{"logging denied", ServerRequests{DenyLogging: true}, every, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`, true},
		{"ping always", all, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, false},
		{"progress always", all, "", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := mcpwire.ParseFromServer([]byte(tc.msg))
			if err != nil {
				if tc.refuse && strings.Contains(tc.name, "repeated") {
					return // refused by the strict reader already
				}
				t.Fatal(err)
			}
			var caps *clientCaps
			if tc.caps != "" {
				caps = readClientCaps(json.RawMessage(tc.caps))
			}
			why := tc.policy.serverCallRefusal(&env, caps)
			if (why != "") != tc.refuse {
				t.Errorf("refusal %q, want refused %v", why, tc.refuse)
			}
		})
	}
}

func TestStripCapabilities(t *testing.T) {
	deny := ServerRequests{DenySampling: true, DenyElicitation: true}
	for _, tc := range []struct {
		name, line, want string
		policy           ServerRequests
		err              bool
	}{
		{"nothing denied", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{}}}}`, "", ServerRequests{}, false},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"roots":{"listChanged":true},"elicitation":{"form":{}}},"clientInfo":{"name":"c","version":"1"}}}` + "\r\n",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"c","version":"1"}}}` + "\r\n", deny, false},
		{"last member removed", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{} , "sampling":{}}}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}` + "\n", deny, false},
		{"case variant removed", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"Sampling":{},"roots":{}}}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}` + "\n", deny, false},
		{"escaped name removed", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"s\u0061mpling":{},"roots":{}}}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}` + "\n", deny, false},
		{"2026-07-28 _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n",
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n", deny, false},
		{"nothing to remove", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}` + "\n", "", deny, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := mcpwire.Parse(mcpwire.Content([]byte(tc.line)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.policy.stripCapabilities([]byte(tc.line), &env)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			want := tc.want
			if want == "" {
				want = tc.line
			}
			if string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestServerCallsThroughTheRelay: what the server asks of the client on
// its own is decided as it arrives, by the relay itself (no npm client
// needed): a refused request is answered to the server with the proxy's
// error and never reaches the client, a denied log message is dropped,
// and what the client announced goes on.
func TestServerCallsThroughTheRelay(t *testing.T) {
	t.Parallel()
	const (
		sampling = `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`
		logMsg   = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
	)
	for _, tc := range []struct {
		name     string
		sr       ServerRequests
		caps     string
		msg      string
		relayed  bool
		answered bool // the server got the proxy's error
	}{
		{"sampling the client did not announce", ServerRequests{}, `{"roots":{}}`, sampling, false, true},
		{"sampling the client announced", ServerRequests{}, `{"sampling":{}}`, sampling, true, false},
		{"sampling the policy denies", ServerRequests{DenySampling: true}, `{"sampling":{}}`, sampling, false, true},
		{"a log message", ServerRequests{}, `{}`, logMsg, true, false},
		{"a log message the policy denies", ServerRequests{DenyLogging: true}, `{}`, logMsg, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var toServer bytes.Buffer
			r, out := bareRelay(1 << 20)
			r.toServer = newOutQueue(&toServer, 1<<40)
			r.o.ServerRequests, r.side = tc.sr, newSideQueue()
			r.checked, r.clientCaps = true, readClientCaps([]byte(tc.caps))
			m := &inbound{line: []byte(tc.msg + "\n")}
			var err error
			if m.env, err = mcpwire.ParseFromServer([]byte(tc.msg)); err != nil {
				t.Fatal(err)
			}
			r.fromServer(m)
			r.flush()
			r.side.close(time.Second)
			if got := out.String() == tc.msg+"\n"; got != tc.relayed || (!got && out.Len() > 0) {
				t.Errorf("the client got %q, want the message: %v", out.String(), tc.relayed)
			}
			want := ""
			if tc.answered {
				want = `{"jsonrpc":"2.0","id":"s1","error":{"code":` + strconv.Itoa(codeRefusedServerRequest)
			}
			if got := toServer.String(); (want == "") != (got == "") || !strings.HasPrefix(got, want) {
				t.Errorf("the server got %q, want %q", got, want)
			}
		})
	}
}

// TestNarrowCapabilities: a client request that announces capabilities
// (initialize's, or a 2026-07-28 request's _meta) has those the policy
// denies removed before anything reads it, the line and the parsed message
// alike; any other request, or a policy that denies none, is left as it is;
// capabilities that must be narrowed but cannot be are refused (false).
func TestNarrowCapabilities(t *testing.T) {
	deny := ServerRequests{DenySampling: true}
	const (
		initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{},"roots":{}}}}`
		narrowed   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}`
		call       = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{}}}}}`
		callNarrow = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}}`
		// sampling announced where no capability is read (no _meta).
		noMeta = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","capabilities":{"sampling":{}}}}`
	)
	for _, tc := range []struct {
		name, line string
		sr         ServerRequests
		want       string // "": the line as it is
		ok         bool
	}{
		{"initialize", initialize, deny, narrowed, true},
		{"initialize, nothing denied", initialize, ServerRequests{}, "", true},
		{"initialize, nothing to remove", narrowed, deny, "", true},
		{"a request's _meta", call, deny, callNarrow, true},
		{"a request without _meta", noMeta, deny, "", true},
		{"cannot be narrowed", strings.Replace(initialize, `"id":1,`, `"id":1,`+"\r", 1), deny, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := bareRelay(1 << 20)
			r.o.ServerRequests = tc.sr
			m := inboundOf(t, tc.line)
			if m.perr != nil {
				t.Fatal(m.perr)
			}
			if ok := r.narrowCapabilities(m); ok != tc.ok {
				t.Fatalf("narrowCapabilities: %v, want %v", ok, tc.ok)
			}
			want := tc.want
			if want == "" {
				want = tc.line
			}
			if string(m.line) != want+"\n" {
				t.Errorf("the line is %s, want %s", m.line, want)
			}
			if e, err := mcpwire.Parse([]byte(want)); err != nil || !bytes.Equal(m.env.Params, e.Params) {
				t.Errorf("the message's params are %s, want %s (%v)", m.env.Params, e.Params, err)
			}
		})
	}
}
