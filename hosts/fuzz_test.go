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

// roundTrip checks that wrap then unwrap gives back data, when it parses as
// h's file at path, and that wrap is idempotent.
func roundTrip(t *testing.T, h Host, path string, data []byte) {
	t.Helper()
	c, err := Parse(h, path, data)
	if err != nil {
		return
	}
	w, changes, err := c.Wrap(WrapOptions{Self: self, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	wc, err := Parse(h, path, w)
	if err != nil {
		t.Fatalf("wrapped file does not parse: %v\n%q", err, w)
	}
	// What wrap says it did is what the host reads now: a wrapped entry
	// runs the proxy over its command line, any other is as it was.
	after := wc.Servers()
	if len(after) != len(changes) {
		t.Fatalf("wrap changed the entries: %d, then %d\n%q", len(changes), len(after), w)
	}
	for i, ch := range changes {
		a := after[i]
		switch {
		case ch.Action == ActWrapped && (a.Wrapped == nil || !slices.Equal(a.Wrapped.Original, ch.Server.Argv)):
			t.Fatalf("entry %d reported wrapped, read as %q\n%q", i, a.Argv, w)
		case ch.Action != ActWrapped && !slices.Equal(a.Argv, ch.Server.Argv):
			t.Fatalf("entry %d %s, but its command line is now %q\n%q", i, ch.Action, a.Argv, w)
		}
	}
	w2, _, _ := wc.Wrap(WrapOptions{Self: self, Policy: policy})
	if !bytes.Equal(w, w2) {
		t.Fatalf("wrap not idempotent:\n%q\n%q", w, w2)
	}
	back, _, _ := wc.Unwrap(nil)
	if !bytes.Equal(back, data) {
		t.Fatalf("round trip:\n%q\n%q\n%q", data, w, back)
	}
}
