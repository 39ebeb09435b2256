package hosts

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestFront: wrap --front points a remote entry's URL at a running front,
// keeping the URL it had (UpstreamKey) and its headers; wrap twice is wrap
// once; another front re-points it; unwrap gives back the original bytes;
// list counts it enforced only for a front it is told of.
func TestFront(t *testing.T) {
	const front = "https://mcpsign-front.example.internal/mcp"
	for _, tc := range []struct {
		name, host, file, data, server string
		// reason, when not empty, is a part of why the entry is not
		// pointed at the front (the file then is left as it was).
		reason string
	}{
		{"vscode http with a comment and ${input:}", "vscode", ".vscode/mcp.json",
			"{\n\t\"servers\": {\n\t\t\"gh\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://api.example/mcp/\", // the API\n\t\t\t\"headers\": {\"Authorization\": \"Bearer ${input:tok}\"},\n\t\t},\n\t},\n}\n",
			"gh", ""},
		{"claude-code, the URL last", "claude-code", ".mcp.json",
			`{"mcpServers": {"r": {"type": "http", "url": "https://x.example/mcp?key=s3cret"}, "other": {"command": "npx"}}}`, "r", ""},
		{"cursor, the URL last with a trailing comma", "cursor", ".cursor/mcp.json",
			"{\r\n  \"mcpServers\": {\r\n    \"r\": {\r\n      \"url\": \"https://x.example/mcp\",\r\n    },\r\n  }\r\n}\r\n", "r", ""},
		{"windsurf serverUrl", "windsurf", "mcp_config.json",
			`{"mcpServers":{"w":{"serverUrl":"https://w.example/mcp"}}}`, "w", ""},
		{"gemini httpUrl", "gemini", ".gemini/settings.json",
			`{"mcpServers": {"h": {"httpUrl": "https://h.example/mcp", "timeout": 5000}}}`, "h", ""},
		{"a stdio entry", "cursor", ".cursor/mcp.json",
			`{"mcpServers": {"s": {"command": "npx", "args": ["-y", "x"]}}}`, "s", "not a URL entry"},
		{"vscode sse", "vscode", ".vscode/mcp.json",
			`{"servers": {"s": {"type": "sse", "url": "https://x.example/sse"}}}`, "s", `type is "sse"`},
		{"a URL with a variable", "claude-code", ".mcp.json",
			`{"mcpServers": {"r": {"type": "http", "url": "https://${HOST}/mcp"}}}`, "r", "host variable"},
		{"codex", "codex", ".codex/config.toml",
			"[mcp_servers.r]\nurl = \"https://r.example/mcp\"\n", "r", "by hand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mustHost(t, tc.host)
			orig := []byte(tc.data)
			c, err := Parse(h, tc.file, orig)
			if err != nil {
				t.Fatal(err)
			}
			opts := WrapOptions{Front: front, Servers: []string{tc.server}}
			out, changes, err := c.Wrap(opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason != "" {
				if a := changes[0].Action; (a != ActNotEnforced && a != ActSkipped) || !strings.Contains(changes[0].Reason, tc.reason) || !bytes.Equal(out, orig) {
					t.Errorf("%s: %s, want left as it was: %s\n%s", a, changes[0].Reason, tc.reason, out)
				}
				return
			}
			s := c.Servers()[0]
			if changes[0].Action != ActWrapped {
				t.Fatalf("%s: %s", changes[0].Action, changes[0].Reason)
			}
			wc, err := Parse(h, tc.file, out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var w Server
			for _, x := range wc.Servers() {
				if x.Name == tc.server {
					w = x
				}
			}
			if w.Kind != Remote || w.URL != front || w.Upstream != s.URL || len(w.Headers) != len(s.Headers) {
				t.Fatalf("pointed at the front: %+v\n%s", w, out)
			}
			if r := (Want{}).Check(w); !strings.Contains(r, "not named as trusted") {
				t.Errorf("Check without the front = %q, want not enforced", r)
			}
			if r := (Want{Fronts: []string{front}}).Check(w); r != "" {
				t.Errorf("Check with the front = %q, want enforced", r)
			}
			again, changes, _ := wc.Wrap(opts)
			if !bytes.Equal(again, out) || changes[0].Action != ActAlreadyWrapped {
				t.Errorf("wrap twice: %s\n%s", changes[0].Action, again)
			}
			other := "http://127.0.0.1:8443/mcp"
			moved, changes, _ := wc.Wrap(WrapOptions{Front: other, Servers: []string{tc.server}})
			mc, err := Parse(h, tc.file, moved)
			if err != nil || changes[0].Action != ActRewrapped || mc.Servers()[0].URL != other && mc.Servers()[1].URL != other {
				t.Errorf("another front: %s %v\n%s", changes[0].Action, err, moved)
			}
			for _, from := range [][]byte{out, moved} {
				fc, _ := Parse(h, tc.file, from)
				back, changes, _ := fc.Unwrap([]string{tc.server})
				if !bytes.Equal(back, orig) || changes[0].Action != ActUnwrapped {
					t.Errorf("unwrap: %s\n%s\nwant\n%s", changes[0].Action, back, orig)
				}
			}
			if red := Redact(string(out), wc.Servers()); strings.Contains(red, "s3cret") {
				t.Errorf("Redact left the upstream's query value:\n%s", red)
			}
		})
	}
}

// TestFrontRefused: a front URL a host should not be sent to, or not one
// entry named, is refused before anything is edited.
func TestFrontRefused(t *testing.T) {
	c, err := Parse(mustHost(t, "cursor"), ".cursor/mcp.json", []byte(`{"mcpServers": {"a": {"url": "https://a/mcp"}, "b": {"url": "https://b/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		front   string
		servers []string
		reason  string
	}{
		{"http://front.example/mcp", []string{"a"}, "plain http://"},
		{"https://user:pw@front.example/mcp", []string{"a"}, "user info"},
		{"https://front.example/mcp?token=x", []string{"a"}, "query"},
		{"ftp://front.example/mcp", []string{"a"}, "not http"},
		{"https://front.example/mcp", nil, "one server entry"},
		{"https://front.example/mcp", []string{"a", "b"}, "one server entry"},
	} {
		_, _, err := c.Wrap(WrapOptions{Front: tc.front, Servers: tc.servers})
		if !errors.Is(err, ErrFront) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("--front %s --server %v: %v, want ErrFront: %s", tc.front, tc.servers, err, tc.reason)
		}
	}
	if _, _, err := c.Wrap(WrapOptions{Front: "http://localhost:8080/mcp", Servers: []string{"a"}}); err != nil {
		t.Errorf("a front on loopback over http: %v", err)
	}
}
