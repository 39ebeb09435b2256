package proxy

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/source"
)

// writeLockUnder pins argv, listed under the client capabilities caps, to a
// tofu lock.
func writeLockUnder(t *testing.T, argv []string, caps string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	snap, err := source.Load(ctx, source.Spec{Command: argv}, source.Options{ClientCapabilities: json.RawMessage(caps)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.lock")
	if err := l.Write(ctx, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClientCapabilitiesDiffer: the proxy checks what the server offers a
// client under the capabilities that client announced. A locked tool the
// server offers only to clients with roots is absent for a client without
// them: reported first, not blocked. A tool added or changed under other
// capabilities blocks, the capability finding first.
func TestClientCapabilitiesDiffer(t *testing.T) {
	t.Parallel()
	const (
		roots       = `{"roots":{"listChanged":true}}`
		initNone    = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
		initRoots   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + roots + `,"clientInfo":{"name":"raw","version":"0"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		toolsList   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		callRoots   = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_roots","arguments":{}}}`
	)
	withRoots := writeLockUnder(t, scriptedArgv(t, "roots-tool"), roots)
	withNone := writeLockUnder(t, scriptedArgv(t, "roots-tool"), `{}`)
	tests := []struct {
		name      string
		lock      string
		behavior  string
		init      string
		blocked   bool
		findings  []string // data.findings of the block, in order
		report    []string // rules in the stderr report, in order
		listTools []string // the client's tools/list, when not blocked
	}{
		{"locked with roots, a client without: not blocked", withRoots, "roots-tool", initNone, false, nil,
			[]string{pin.RuleClientCapabilitiesDiffer, pin.RuleToolAbsentForClient}, []string{"greet"}},
		{"locked with roots, a client with roots: as locked", withRoots, "roots-tool", initRoots, false, nil,
			nil, []string{"greet", "list_roots"}},
		{"locked without roots, a client with roots gets an extra tool: blocked", withNone, "roots-tool", initRoots, true,
			[]string{pin.RuleClientCapabilitiesDiffer, "pin-tool-added tool/list_roots"},
			[]string{pin.RuleClientCapabilitiesDiffer, pin.RuleToolAdded}, nil},
		{"locked with roots, a client without gets a changed tool: blocked", withRoots, "roots-evil", initNone, true,
			[]string{pin.RuleClientCapabilitiesDiffer, "pin-tool-changed tool/greet"},
			[]string{pin.RuleClientCapabilitiesDiffer, pin.RuleToolChanged, pin.RuleToolAbsentForClient}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startProxy(t, lockPolicy(t, tt.lock, LockOptions{}), scriptedArgv(t, tt.behavior), func(o *Options) { o.CheckTimeout = 5 * time.Second })
			p := newRawPeer(t, s.out, s.in)
			p.send(tt.init)
			line := p.next()
			m := decode(t, line)
			if tt.blocked {
				if m.Error == nil || m.Error.Code != BlockedCode {
					t.Fatalf("initialize answer %s, want the block error", line)
				}
				var e struct {
					Error struct {
						Data struct {
							Findings []string `json:"findings"`
						} `json:"data"`
					} `json:"error"`
				}
				if err := json.Unmarshal(line, &e); err != nil || !slices.Equal(e.Error.Data.Findings, tt.findings) {
					t.Errorf("data.findings %q (%v), want %q", e.Error.Data.Findings, err, tt.findings)
				}
				if b := asBlocked(s.wait()); b == nil || !b.Drift() {
					t.Errorf("Run: %v, want a drift block", b)
				}
				checkOrder(t, s.stderr.String(), tt.report)
				return
			}
			if m.Error != nil {
				t.Fatalf("initialize answer %s", line)
			}
			p.send(initialized)
			p.send(toolsList)
			var list struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			if err := json.Unmarshal(decode(t, p.next()).Result, &list); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, tt.listTools) {
				t.Errorf("tools/list %q, want %q", names, tt.listTools)
			}
			if !slices.Contains(names, "list_roots") {
				// A tool the check did not approve for this client is
				// never called through the proxy.
				p.send(callRoots)
				if c := decode(t, p.next()); c.Error == nil || !strings.Contains(c.Error.Message, "not among the approved definitions") {
					t.Errorf("tools/call list_roots: %+v, want a refusal", c)
				}
			}
			if err := s.wait(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			var report string
			for len(s.events) > 0 {
				if e := <-s.events; e.Kind == EventChecked && e.Decision != nil {
					report += e.Decision.ReportText()
				}
			}
			if tt.report == nil {
				if strings.Contains(report, "pin-") {
					t.Errorf("notices under equal capabilities:\n%s", report)
				}
				return
			}
			checkOrder(t, report, tt.report)
			if !strings.Contains(report, `"roots": locked, not announced now`) {
				t.Errorf("the report does not name the capability difference:\n%s", report)
			}
		})
	}
}

// checkOrder checks that each rule appears in text, in that order.
func checkOrder(t *testing.T, text string, rules []string) {
	t.Helper()
	at := 0
	for _, r := range rules {
		i := strings.Index(text[at:], r)
		if i < 0 {
			t.Fatalf("%s missing, or not after the rules before it, in:\n%s", r, text)
		}
		at += i + len(r)
	}
}

// TestFirstUseRecordsClientCapabilities: a lock the proxy writes on first
// use records what its client announced.
func TestFirstUseRecordsClientCapabilities(t *testing.T) {
	for _, tt := range []struct{ caps, want string }{
		{`{}`, `{}`},
		{`{"roots":{"listChanged":true}, "sampling":{}}`, `{"roots":{"listChanged":true},"sampling":{}}`},
	} {
		path := filepath.Join(t.TempDir(), "first.lock")
		s := startProxy(t, lockPolicy(t, path, LockOptions{TOFU: true}), scriptedArgv(t, "roots-tool"), nil)
		p := newRawPeer(t, s.out, s.in)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + tt.caps + `,"clientInfo":{"name":"raw","version":"0"}}}`)
		if m := decode(t, p.next()); m.Error != nil {
			t.Fatalf("initialize: %+v", m)
		}
		if err := s.wait(); err != nil {
			t.Fatal(err)
		}
		l, err := pin.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(l.ClientCapabilities) != tt.want {
			t.Errorf("lock records %s, want %s", l.ClientCapabilities, tt.want)
		}
	}
}

func TestAnnouncedCapabilities(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
		meta           bool
	}{
		{"initialize", `{"protocolVersion":"x","capabilities":{ "roots" : {} }}`, `{"roots":{}}`, false},
		{"initialize without", `{"protocolVersion":"x"}`, `{}`, false},
		{"initialize null", `{"capabilities":null}`, `{}`, false},
		{"initialize not an object", `{"capabilities":[]}`, ``, false},
		{"initialize repeated", `{"capabilities":{},"capabilities":{"roots":{}}}`, ``, false},
		{"initialize case variant", `{"Capabilities":{"roots":{}}}`, ``, false},
		{"meta", `{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`, `{"roots":{"listChanged":true}}`, true},
		{"meta without", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, `{}`, true},
		{"no meta", ``, `{}`, true},
	} {
		var got []byte
		if tt.meta {
			var in []byte
			if tt.in != "" {
				in = []byte(tt.in)
			}
			got = metaCapabilities(in)
		} else {
			got = initializeCapabilities([]byte(tt.in))
		}
		if string(got) != tt.want || (tt.want == "" && got != nil) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
