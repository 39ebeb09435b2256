package hosts

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// FuzzArgv checks that ParseWrapped inverts WrapArgv for every argv, and
// that an argv that does not start mcpsign proxy is never read as wrapped.
func FuzzArgv(f *testing.F) {
	f.Add("npx", "-y\x00@acme/x@1", "/p.json", "notes")
	f.Add("${workspaceFolder}/srv", "--\x00--policy\x00x", "${input:p}", "n")
	f.Add("mcpsign", "proxy\x00--\x00x", "p", "")
	f.Fuzz(func(t *testing.T, prog, args, pol, name string) {
		original := []string{prog}
		if args != "" {
			original = append(original, strings.Split(args, "\x00")...)
		}
		w, ok := ParseWrapped(WrapArgv("/bin/mcpsign", pol, name, original))
		if !ok || !slices.Equal(w.Original, original) || w.Policy != pol || w.Name != name {
			t.Fatalf("ParseWrapped(WrapArgv(%q)) = %+v, %v", original, w, ok)
		}
		if _, ok := ParseWrapped(original); ok && !isMcpsign(prog) {
			t.Fatalf("%q read as wrapped", original)
		}
	})
}

// FuzzRoundTrip checks, on any file that parses (JSONC or TOML), that wrap then unwrap
// gives back the bytes and that wrap is idempotent.
func FuzzRoundTrip(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(fx.host == "codex", []byte(fx.data))
	}
	for _, g := range hostGolden {
		f.Add(strings.HasSuffix(g.file, ".toml"), readGolden(f, "hosts/"+g.file))
	}
	for _, rc := range rewrapCases {
		f.Add(rc.host == "codex", []byte(rc.data))
	}
	f.Add(false, []byte(`{"mcpServers": {"a": {"command": "x", "env": {"LD_PRELOAD": "y"}}, "b": {"command": "/opt/mcpsign/bin/mcpsign", "args": ["proxy", "--", "z"], "envFile": "e"}}}`))
	// Remote entries, with headers, a type, comments and a trailing comma.
	f.Add(false, []byte(`{"mcpServers": {"r": {"type": "http", /* c */ "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},}, "s": {"type": "sse", "url": "https://y/sse"}}}`))
	f.Add(false, []byte("{\"mcpServers\": {\"r\": {\n  \"url\": \"https://x/mcp\"\n}}}"))
	f.Add(true, []byte("[mcp_servers.f]\n  url = 'https://x/mcp' # c\n  bearer_token_env_var = \"T\"\n  http_headers = { \"A\" = \"b\" }\n  env_http_headers = { \"X\" = \"V\" }\n"))
	f.Add(true, []byte("[mcp_servers.f]\r\nurl = \"https://x/mcp\"\r\n# mcpsign: http_headers = {}\r\n"))
	// A URL member or a type beside a command; an env name with a "=".
	f.Add(false, []byte(`{"mcpServers": {"a": {"type": "http", "url": "https://x/mcp", "command": "/opt/mcpsign/bin/mcpsign", "args": ["proxy", "--", "z"]}, "b": {"command": "x", "env": {"HOME=/r": ""}}}}`))
	f.Add(true, []byte("[mcp_servers.a]\ncommand = \"x\"\nurl = \"https://x/mcp\"\n"))
	// Lines in a multi-line string are no keys (they were once edited).
	f.Add(true, []byte("[other]\ns = \"\"\"\n[mcp_servers.a]\ncommand = \"f\"\n\"\"\"\n[mcp_servers.a]\ncommand = \"x\"\nd = '''\nargs = []\n'''\n"))
	f.Fuzz(func(t *testing.T, codex bool, data []byte) {

		h, _ := Lookup("claude-code")
		if codex {
			h, _ = Lookup("codex")
		}
		roundTrip(t, h, "f", data)
	})
}

// FuzzRoundTripSettings is FuzzRoundTrip on VS Code's settings.json, whose
// servers are under "mcp" (in three spellings).
func FuzzRoundTripSettings(f *testing.F) {
	for _, g := range vscodeSettings {
		f.Add(readGolden(f, g.file))
	}
	f.Add([]byte(`{"mcp": {"servers": {"a": {"command": "x",}, }, "mcpServers": {"b": {"command": "y", "args": []}}}, "mcp.servers": {"c": {"command": "z"}}}`))
	// Dotted names into a map (VS Code splits them): listed, never edited.
	f.Add([]byte(`{"mcp": {"servers": {"a": {"command": "x"}}}, "mcp.servers.a": {"command": "y"}, "mcp.servers.b.command": "z", "mcp.mcpServers": {"c": {"command": "w"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, _ := Lookup("vscode")
		roundTrip(t, h, "/p/.vscode/settings.json", data)
	})
}

// roundTrip checks, when data parses as h's file at path, that what wrap
// says it did is what the host reads after it, that wrap is idempotent,
// that unwrap after wrap is unwrap alone, and, when no entry of data is
// wrapped, that wrap then unwrap gives back data.
func roundTrip(t *testing.T, h Host, path string, data []byte) {
	t.Helper()
	c, err := Parse(h, path, data)
	if err != nil {
		return
	}
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	w, changes, err := c.Wrap(opts)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := Parse(h, path, w)
	if err != nil {
		t.Fatalf("wrapped file does not parse: %v\n%q", err, w)
	}
	// What wrap says it did is what the host reads now: a wrapped entry
	// runs this mcpsign under the policy over its command line (or URL),
	// any other is as it was.
	after := wc.Servers()
	if len(after) != len(changes) {
		t.Fatalf("wrap changed the entries: %d, then %d\n%q", len(changes), len(after), w)
	}
	anyWrapped := false
	for i, ch := range changes {
		a := after[i]
		anyWrapped = anyWrapped || ch.Server.Wrapped != nil || ch.Server.Upstream != ""
		inner := ch.Server.Argv
		switch {
		case ch.Server.Kind == Remote:
			inner = []string{ch.Server.URL}
		case ch.Server.Wrapped != nil:
			inner = ch.Server.Wrapped.Original
		}
		switch ch.Action {
		case ActWrapped, ActRewrapped, ActAlreadyWrapped:
			if a.Wrapped == nil || !slices.Equal(a.Wrapped.Original, inner) || opts.Want().Check(a) != "" {
				t.Fatalf("entry %d reported %s, read as %q: %s\n%q", i, ch.Action, a.Argv, opts.Want().Check(a), w)
			}
		default:
			if !slices.Equal(a.Argv, ch.Server.Argv) || a.URL != ch.Server.URL || a.Kind != ch.Server.Kind {
				t.Fatalf("entry %d %s, but it is now %s %q %q\n%q", i, ch.Action, a.Kind, a.Argv, a.URL, w)
			}
			if ch.Action != ActSkipped && ch.Server.Wrapped != nil && opts.Want().Check(ch.Server) == "" {
				t.Fatalf("entry %d is enforced but reported %s", i, ch.Action)
			}
		}
	}
	w2, _, _ := wc.Wrap(opts)
	if !bytes.Equal(w, w2) {
		t.Fatalf("wrap not idempotent:\n%q\n%q", w, w2)
	}
	back, _, _ := wc.Unwrap(nil)
	alone, _, _ := c.Unwrap(nil)
	if !bytes.Equal(back, alone) {
		t.Fatalf("unwrap after wrap is not unwrap alone:\n%q\n%q\n%q\n%q", data, w, back, alone)
	}
	if !anyWrapped && !bytes.Equal(back, data) {
		t.Fatalf("round trip:\n%q\n%q\n%q", data, w, back)
	}
	frontRoundTrip(t, h, path, c, data)
}

// frontRoundTrip checks, for each remote entry of c (data parsed as h's
// file at path) that is not pointed at a front, that wrap --front points
// it (every entry of its name) at the front and nothing else changes, is
// idempotent, and that unwrap of that name gives back data when no entry
// of the name was wrapped before.
func frontRoundTrip(t *testing.T, h Host, path string, c *Config, data []byte) {
	t.Helper()
	const front = "https://front.example/mcp"
	servers := c.Servers()
	for _, s := range servers {
		if s.Kind != Remote || s.Upstream != "" || s.frontProblem != "" {
			continue
		}
		same := 0
		for _, o := range servers {
			if o.Name == s.Name {
				same++
				if o.Wrapped != nil || o.Upstream != "" || o.Kind != Remote {
					same = -1000
				}
			}
		}
		opts := WrapOptions{Front: front, Servers: []string{s.Name}}
		w, changes, err := c.Wrap(opts)
		if err != nil {
			t.Fatal(err)
		}
		wc, err := Parse(h, path, w)
		if err != nil {
			t.Fatalf("file pointed at the front does not parse: %v\n%q", err, w)
		}
		after := wc.Servers()
		if len(after) != len(servers) {
			t.Fatalf("wrap --front changed the entries\n%q", w)
		}
		for i, a := range after {
			o := servers[i]
			pointed := a.URL == front && a.Upstream == o.URL && a.Kind == Remote
			switch {
			case o.Name != s.Name:
				if a.URL != o.URL || a.Upstream != o.Upstream || a.Kind != o.Kind || !slices.Equal(a.Argv, o.Argv) {
					t.Fatalf("wrap --front %s changed entry %d (%s)\n%q", s.Name, i, o.Name, w)
				}
			case o.Kind == Remote && o.frontProblem == "" && !pointed:
				t.Fatalf("entry %d not pointed at the front: %+v\n%q", i, a, w)
			}
		}
		for _, ch := range changes {
			want := []Action{ActWrapped, ActNotEnforced}
			if ch.Server.Upstream != "" {
				want = []Action{ActRewrapped, ActAlreadyWrapped, ActNotEnforced}
			}
			if ch.Server.Name == s.Name && ch.Server.Kind == Remote && ch.Server.frontProblem == "" && !slices.Contains(want, ch.Action) {
				t.Fatalf("reported %s: %s", ch.Action, ch.Reason)
			}
		}
		if w2, _, _ := wc.Wrap(opts); !bytes.Equal(w, w2) {
			t.Fatalf("wrap --front not idempotent:\n%q\n%q", w, w2)
		}
		back, _, _ := wc.Unwrap([]string{s.Name})
		if same > 0 && !bytes.Equal(back, data) {
			t.Fatalf("wrap --front then unwrap:\n%q\n%q\n%q", data, w, back)
		}
	}
}

// FuzzFront is frontRoundTrip on any JSONC file of Claude Code's shape:
// wrap --front then unwrap gives back the bytes.
func FuzzFront(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"r": {"type": "http", /* c */ "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},}, "s": {"type": "sse", "url": "https://y/sse"}}}`))
	f.Add([]byte("{\"mcpServers\": {\"r\": {\n  \"url\": \"https://x/mcp\"\n}}}"))
	f.Add([]byte("{\"mcpServers\": {\"r\": {\"url\": \"https://x/mcp\", \"mcpsignUpstream\": \"https://y/mcp\"}, \"q\": {\"url\"  :  \"https://\\u0078/mcp\" , }}}"))
	f.Add([]byte(`{"projects": {"/a": {"mcpServers": {"r": {"url": "https://a/mcp"}}}}, "mcpServers": {"r": {"type": "http", "url": "https://b/mcp"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, _ := Lookup("claude-code")
		c, err := Parse(h, "f", data)
		if err != nil {
			return
		}
		frontRoundTrip(t, h, "f", c, data)
	})
}
