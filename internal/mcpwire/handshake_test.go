package mcpwire

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// fakeClient answers each method with a fixed result.
type fakeClient struct {
	results map[string]string
	called  []string
}

func (c *fakeClient) Call(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	c.called = append(c.called, method)
	r, ok := c.results[method]
	if !ok {
		return nil, &RPCError{Method: method, Code: CodeMethodNotFound, Message: "method not found"}
	}
	return json.RawMessage(r), nil
}

func (c *fakeClient) Notify(context.Context, string) error { return nil }

// TestHandshakeDiscoverRefusal: a server/discover answer refused for a
// rule the official clients' schemas check too falls back to initialize
// (they do); one only mcpsign's strict reader refuses (the official clients
// read it: a repeated member's last value wins) is a protocol error naming
// server/discover, never a fallback (docs/DISCOVERY.md, "How a hello is
// read").
func TestHandshakeDiscoverRefusal(t *testing.T) {
	t.Parallel()
	const (
		head   = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},`
		tail   = `"serverInfo":{"name":"s","version":"1"}}`
		legacy = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"},"instructions":"clean"}`
	)
	for _, tt := range []struct {
		name, discover string
		fallback       bool   // falls back to initialize
		want           string // in the error otherwise; "" for the modern hello
	}{
		{name: "valid", discover: head + `"instructions":"clean",` + tail},
		{name: "tools true", discover: strings.Replace(head, `"tools":{}`, `"tools":true`, 1) + tail, fallback: true},
		{name: "instructions null", discover: head + `"instructions":null,` + tail, fallback: true},
		{name: "version a number", discover: strings.Replace(head, `["2026-07-28"]`, `["2026-07-28",1]`, 1) + tail, fallback: true},
		{name: "listChanged a string", discover: strings.Replace(head, `"tools":{}`, `"tools":{"listChanged":"yes"}`, 1) + tail, fallback: true},
		// The TypeScript SDK v2's probe takes an answer without resultType,
		// or with another value: its schema of the answer has none.
		{name: "no resultType", discover: strings.Replace(head, `"resultType":"complete",`, ``, 1) + tail, want: "resultType"},
		{name: "resultType not complete", discover: strings.Replace(head, `"complete"`, `"input_required"`, 1) + tail, want: "resultType"},
		{name: "repeated instructions", discover: head + `"instructions":"clean","instructions":"POISON",` + tail, want: "instructions"},
		{name: "case variant of instructions", discover: head + `"instructions":"clean","Instructions":"POISON",` + tail, want: "Instructions"},
		{name: "repeated flag", discover: strings.Replace(head, `"tools":{}`, `"tools":{"listChanged":true,"listChanged":false}`, 1) + tail, want: "listChanged"},
		{name: "invalid UTF-8 instructions", discover: head + "\"instructions\":\"clean\xff\"," + tail, want: "instructions"},
		{name: "lone surrogate instructions", discover: head + `"instructions":"clean\ud800",` + tail, want: "instructions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &fakeClient{results: map[string]string{MethodDiscover: tt.discover, MethodInitialize: legacy}}
			h, err := Handshake(context.Background(), c, HandshakeOptions{ClientInfo: json.RawMessage(`{"name":"t","version":"1"}`), ClientCapabilities: json.RawMessage(`{}`)})
			switch {
			case tt.fallback:
				if err != nil || h.ProtocolVersion != ProtocolLegacy || len(c.called) != 2 {
					t.Fatalf("hello %+v, err %v, calls %v; want the initialize fallback", h, err, c.called)
				}
			case tt.want == "":
				if err != nil || h.ProtocolVersion != ProtocolModern || h.Instructions == nil || *h.Instructions != "clean" {
					t.Fatalf("hello %+v, err %v; want the modern hello", h, err)
				}
			default:
				if err == nil || !errors.Is(err, ErrProtocol) || IsShapeRefusal(err) ||
					!strings.Contains(err.Error(), "server/discover") || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("hello %+v, err %v; want a protocol error naming server/discover and %s", h, err, tt.want)
				}
				if len(c.called) != 1 {
					t.Errorf("calls %v, want no initialize fallback", c.called)
				}
			}
		})
	}
}

// TestHandshakeForcedVersion: a forced modern version asks server/discover
// only (its failure is an error, no fallback); a forced legacy version asks
// initialize only, for that version.
func TestHandshakeForcedVersion(t *testing.T) {
	t.Parallel()
	const (
		discover = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`
		legacy   = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`
	)
	for _, tt := range []struct {
		name, force string
		results     map[string]string
		calls       []string
		version     string // of the hello; "" for an error
		negotiated  string
		err         string
	}{
		{name: "modern", force: ProtocolModern, results: map[string]string{MethodDiscover: discover, MethodInitialize: legacy},
			calls: []string{MethodDiscover}, version: ProtocolModern},
		{name: "modern, no server/discover", force: ProtocolModern, results: map[string]string{MethodInitialize: legacy},
			calls: []string{MethodDiscover}, err: "forced"},
		{name: "legacy", force: "2025-06-18", results: map[string]string{MethodDiscover: discover, MethodInitialize: legacy},
			calls: []string{MethodInitialize}, version: "2025-06-18", negotiated: "2025-06-18"},
		{name: "default, no server/discover", results: map[string]string{MethodInitialize: legacy},
			calls: []string{MethodDiscover, MethodInitialize}, version: "2025-06-18", negotiated: "2025-06-18"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &fakeClient{results: tt.results}
			negotiated := ""
			h, err := Handshake(context.Background(), c, HandshakeOptions{ProtocolVersion: tt.force,
				ClientInfo: json.RawMessage(`{"name":"t","version":"1"}`), ClientCapabilities: json.RawMessage(`{}`),
				Negotiated: func(v string) { negotiated = v }})
			if strings.Join(c.called, " ") != strings.Join(tt.calls, " ") {
				t.Errorf("calls %v, want %v", c.called, tt.calls)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("hello %+v, err %v; want an error with %q", h, err, tt.err)
				}
				return
			}
			if err != nil || h.ProtocolVersion != tt.version || negotiated != tt.negotiated {
				t.Fatalf("hello %+v, negotiated %q, err %v; want version %s", h, negotiated, err, tt.version)
			}
		})
	}
}
