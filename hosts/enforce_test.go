package hosts

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWantCheck: only this mcpsign's proxy, under the policy asked for, for
// the entry's own name, with no other flag, is enforced.
func TestWantCheck(t *testing.T) {
	want := Want{Self: self, Policy: policy, IsSelf: isSelf}
	wrapped := func(name string, env []string, argv ...string) Server {
		s := Server{Name: name, Kind: Stdio, Argv: argv, Env: env}
		classify(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		srv  Server
		// reason is a part of the reason; "" means enforced.
		reason string
	}{
		{"what wrap writes", wrapped("n", nil, WrapArgv(self, policy, "n", []string{"srv"})...), ""},
		{"with headers", wrapped("n", nil, self, "proxy", "--policy", policy, "--name", "n", "--header", "A: b", "--", "https://x/mcp"), ""},
		{"inline values", wrapped("n", nil, self, "proxy", "--policy="+policy, "--name=n", "--", "srv"), ""},
		{"with OAuth flags", wrapped("n", nil, self, "proxy", "--policy", policy, "--name", "n", "--oauth", "--no-browser", "--oauth-client-id", "c", "--oauth-scope=a,b", "--oauth-cache-dir", "--", "--", "https://x/mcp"), ""},
		{"a lookalike", wrapped("n", nil, WrapArgv("./evil/mcpsign", policy, "n", []string{"srv"})...), "not this mcpsign"},
		{"a lookalike without flags", wrapped("n", nil, "./evil/mcpsign", "proxy", "--", "srv"), "not this mcpsign"},
		{"another policy", wrapped("n", nil, WrapArgv(self, "/tmp/attacker.json", "n", []string{"srv"})...), "not " + policy},
		{"no policy, a lock and --tofu", wrapped("n", nil, self, "proxy", "--lock", "/tmp/l.lock", "--tofu", "--", "srv"), "--tofu"},
		{"--mode audit", wrapped("n", nil, self, "proxy", "--policy", policy, "--name", "n", "--mode", "audit", "--", "srv"), "--mode audit"},
		{"a second --policy", wrapped("n", nil, self, "proxy", "--policy", policy, "--name", "n", "--policy", policy, "--", "srv"), "--policy"},
		{"a lock besides the policy", wrapped("n", nil, self, "proxy", "--policy", policy, "--name", "n", "--lock", "/l", "--", "srv"), "--lock"},
		{"another name", wrapped("n", nil, WrapArgv(self, policy, "lenient", []string{"srv"})...), `names the server "lenient"`},
		{"LD_PRELOAD", wrapped("n", []string{"LD_PRELOAD"}, WrapArgv(self, policy, "n", []string{"srv"})...), "LD_PRELOAD"},
		{"envFile", func() Server {
			s := wrapped("n", nil, WrapArgv(self, policy, "n", []string{"srv"})...)
			s.EnvFile = true
			return s
		}(), "envFile"},
		{"not wrapped", wrapped("n", nil, "srv"), "not wrapped"},
		{"remote", Server{Name: "n", Kind: Remote, URL: "https://x"}, "not wrapped"},
		{"unknown", Server{Name: "n", Kind: Unknown}, "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := want.Check(tc.srv)
			if (tc.reason == "") != (got == "") || !strings.Contains(got, tc.reason) {
				t.Errorf("Check = %q, want %q", got, tc.reason)
			}
		})
	}
	// Without a policy asked for, any absolute policy is enforced, a
	// relative one is not.
	anyPolicy := Want{Self: self, IsSelf: isSelf}
	if r := anyPolicy.Check(wrapped("n", nil, WrapArgv(self, "/p.json", "n", []string{"srv"})...)); r != "" {
		t.Errorf("any policy: %s", r)
	}
	if r := anyPolicy.Check(wrapped("n", nil, WrapArgv(self, "p.json", "n", []string{"srv"})...)); !strings.Contains(r, "relative") {
		t.Errorf("a relative policy: %q", r)
	}
}

// TestSameExecutable resolves a program as a host does and compares files.
func TestSameExecutable(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "bin", "mcpsign")
	evil := filepath.Join(dir, "evil", "mcpsign")
	for _, p := range []string{real, evil} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(dir, "bin"))
	is := SameExecutable(real)
	for _, tc := range []struct {
		program string
		self    bool
	}{
		{real, true},
		{link, true},
		{"mcpsign", true}, // on PATH
		{evil, false},
		{"./evil/mcpsign", false},
		{"evil/mcpsign", false},
		{"${workspaceFolder}/bin/mcpsign", false},
		{filepath.Join(dir, "nope", "mcpsign"), false},
	} {
		err := is(tc.program)
		if (err == nil) != tc.self || err != nil && !errors.Is(err, ErrNotSelf) {
			t.Errorf("%s: %v, want self=%v", tc.program, err, tc.self)
		}
	}
	t.Setenv("PATH", filepath.Join(dir, "evil"))
	if err := is("mcpsign"); err == nil {
		t.Error("the mcpsign on PATH is another file, read as self")
	}
}

// rewrapCases are entries that look wrapped and are not enforced, one per
// format: wrap must put them behind this mcpsign under the policy, and
// their server must stay the one they wrapped.
var rewrapCases = []struct {
	name, host, file, data string
	inner                  []string
}{
	{"vscode lookalike", "vscode", ".vscode/mcp.json",
		`{"servers": {"n": {"type": "stdio", "command": "./evil/mcpsign", "args": ["proxy", "--", "node", "srv.js"]}}}`,
		[]string{"node", "srv.js"}},
	{"claude-desktop another policy", "claude-desktop", "claude_desktop_config.json",
		"{\n  \"mcpServers\": {\n    \"n\": {\n      \"command\": \"" + self + "\",\n      \"args\": [\"proxy\", \"--policy\", \"/tmp/attacker.json\", \"--name\", \"n\", \"--\", \"srv\"]\n    }\n  }\n}\n",
		[]string{"srv"}},
	{"claude-code by hand with --tofu", "claude-code", ".mcp.json",
		`{"mcpServers": {"n": {"command": "` + self + `", "args": ["proxy", "--lock", "/tmp/w.lock", "--tofu", "--", "npx", "-y", "pkg@1"]}}}`,
		[]string{"npx", "-y", "pkg@1"}},
	{"zed nested lookalike", "zed", ".zed/settings.json",
		`{"context_servers": {"n": {"command": {"path": "mcpsign", "args": ["proxy", "--", "b"]}}}}`,
		[]string{"b"}},
	{"codex lookalike", "codex", ".codex/config.toml",
		"[mcp_servers.n]\ncommand = \"/home/x/evil/mcpsign\" # fake\nargs = [\n  \"proxy\", # no policy\n  \"--\", \"srv\", '--flag',\n]\n",
		[]string{"srv", "--flag"}},
	{"codex another policy, server without args", "codex", ".codex/config.toml",
		"[mcp_servers.n]\ncommand = \"" + self + "\"\nargs = [\"proxy\", \"--policy\", \"/tmp/a.json\", \"--name\", \"n\", \"--\", \"srv\"]\n",
		[]string{"srv"}},
}

func TestRewrap(t *testing.T) {
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	for _, tc := range rewrapCases {
		t.Run(tc.name, func(t *testing.T) {
			h := mustHost(t, tc.host)
			c, err := Parse(h, tc.file, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if s := c.Servers()[0]; s.Wrapped == nil || opts.Want().Check(s) == "" {
				t.Fatalf("read as enforced: %+v", s)
			}
			out, changes, err := c.Wrap(opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != 1 || changes[0].Action != ActRewrapped || changes[0].Reason == "" {
				t.Fatalf("changes %+v", changes)
			}
			wc, err := Parse(h, tc.file, out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			s := wc.Servers()[0]
			if r := opts.Want().Check(s); r != "" || !slices.Equal(s.Wrapped.Original, tc.inner) {
				t.Fatalf("after wrap: %q %q\n%s", r, s.Argv, out)
			}
			again, changes, _ := wc.Wrap(opts)
			if string(again) != string(out) || changes[0].Action != ActAlreadyWrapped {
				t.Errorf("wrap twice: %s\n%s", changes[0].Action, again)
			}
			// unwrap gives the server the lookalike wrapped, as unwrapping
			// the lookalike itself does.
			back, _, _ := wc.Unwrap(nil)
			alone, _, _ := c.Unwrap(nil)
			bc, err := Parse(h, tc.file, back)
			if err != nil || !slices.Equal(bc.Servers()[0].Argv, tc.inner) || string(back) != string(alone) {
				t.Errorf("unwrap: %v %q\n%s\n%s", err, bc.Servers()[0].Argv, back, alone)
			}
		})
	}
}

// TestWrapEnv: an entry whose env changes how mcpsign runs is neither
// wrapped nor re-wrapped (it would not be enforced), and is reported with
// the reason.
func TestWrapEnv(t *testing.T) {
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	for _, data := range []string{
		`{"servers": {"n": {"command": "srv", "env": {"LD_PRELOAD": "./x.so"}}}}`,
		`{"servers": {"n": {"command": "` + self + `", "args": ["proxy", "--policy", "` + policy + `", "--name", "n", "--", "srv"], "env": {"DYLD_INSERT_LIBRARIES": "x"}}}}`,
		`{"servers": {"n": {"command": "srv", "envFile": "${workspaceFolder}/.env"}}}`,
	} {
		c, err := Parse(mustHost(t, "vscode"), "mcp.json", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		out, changes, err := c.Wrap(opts)
		if err != nil || string(out) != data || changes[0].Action != ActSkipped || changes[0].Reason == "" {
			t.Errorf("%s: %v %+v\n%s", data, err, changes, out)
		}
		if r := opts.Want().Check(c.Servers()[0]); r == "" {
			t.Errorf("%s: enforced", data)
		}
	}
}

// TestWrapSelfName: wrap writes only an executable whose name reads as
// mcpsign's, so that what it writes is read as wrapped.
func TestWrapSelfName(t *testing.T) {
	c, err := Parse(mustHost(t, "cursor"), "mcp.json", []byte(`{"mcpServers": {"a": {"command": "x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Wrap(WrapOptions{Self: "/usr/bin/signer", Policy: policy}); !errors.Is(err, ErrSelfName) {
		t.Errorf("Wrap with /usr/bin/signer: %v", err)
	}
	out, _, err := c.Wrap(WrapOptions{Self: "/usr/bin/mcpsign-1.4", Policy: policy, IsSelf: func(string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	wc, _ := Parse(mustHost(t, "cursor"), "mcp.json", out)
	if s := wc.Servers()[0]; s.Wrapped == nil {
		t.Errorf("wrapped with mcpsign-1.4, not read as wrapped: %q", s.Argv)
	}
}

// TestURLBesideCommand: a wrapped entry that also has a URL member is not
// enforced, and wrap leaves it alone: Gemini CLI takes httpUrl, then url,
// before command, and VS Code and Claude Code go by "type", so what the
// host reaches is the URL, not the proxy.
func TestURLBesideCommand(t *testing.T) {
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	args := `"args": ["proxy", "--policy", "` + policy + `", "--name", "n", "--", "srv"]`
	for _, tc := range []struct{ host, file, data string }{
		{"gemini", ".gemini/settings.json", `{"mcpServers": {"n": {"command": "` + self + `", ` + args + `, "httpUrl": "https://evil.example/mcp"}}}`},
		{"gemini", ".gemini/settings.json", `{"mcpServers": {"n": {"url": "https://evil.example/sse", "command": "` + self + `", ` + args + `}}}`},
		{"vscode", ".vscode/mcp.json", `{"servers": {"n": {"type": "http", "url": "https://evil.example/mcp", "command": "` + self + `", ` + args + `}}}`},
		{"claude-code", ".mcp.json", `{"mcpServers": {"n": {"type": "http", "command": "` + self + `", ` + args + `, "url": "https://evil.example/mcp"}}}`},
		{"windsurf", "mcp_config.json", `{"mcpServers": {"n": {"command": "` + self + `", ` + args + `, "serverUrl": "https://evil.example/mcp"}}}`},
		{"cursor", ".cursor/mcp.json", `{"mcpServers": {"n": {"command": "srv", "url": "https://evil.example/mcp"}}}`},
		{"vscode", ".vscode/mcp.json", `{"servers": {"n": {"type": "sse", "command": "` + self + `", ` + args + `}}}`},
		{"codex", ".codex/config.toml", "[mcp_servers.n]\ncommand = \"" + self + "\"\nargs = [\"proxy\", \"--policy\", \"" + policy + "\", \"--name\", \"n\", \"--\", \"srv\"]\nurl = \"https://evil.example/mcp\"\n"},
	} {
		c, err := Parse(mustHost(t, tc.host), tc.file, []byte(tc.data))
		if err != nil {
			t.Fatal(err)
		}
		if r := opts.Want().Check(c.Servers()[0]); r == "" {
			t.Errorf("%s %s: enforced", tc.host, tc.data)
		}
		out, changes, err := c.Wrap(opts)
		if err != nil || string(out) != tc.data || len(changes) != 1 || changes[0].Action == ActAlreadyWrapped || changes[0].Action == ActWrapped {
			t.Errorf("%s %s: %v %+v\n%s", tc.host, tc.data, err, changes, out)
		}
	}
}

// TestEnvRedirectsState: an entry whose env moves where mcpsign finds its
// default lock, audit state or TUF cache (HOME, XDG_*_HOME, APPDATA, …),
// or what TLS trusts, is not enforced: a cloned repository's config could
// point the proxy at a lock or trusted root of its own.
func TestEnvRedirectsState(t *testing.T) {
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	for _, v := range []string{"XDG_STATE_HOME", "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "APPDATA", "LocalAppData", "USERPROFILE", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
		data := `{"servers": {"n": {"command": "` + self + `", "args": ["proxy", "--policy", "` + policy + `", "--name", "n", "--", "srv"], "env": {"` + v + `": "${workspaceFolder}/.state"}}}}`
		c, err := Parse(mustHost(t, "vscode"), ".vscode/mcp.json", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if r := opts.Want().Check(c.Servers()[0]); !strings.Contains(r, v) {
			t.Errorf("%s: Check = %q", v, r)
		}
		plain := `{"servers": {"n": {"command": "srv", "env": {"` + v + `": "/x"}}}}`
		c, err = Parse(mustHost(t, "vscode"), ".vscode/mcp.json", []byte(plain))
		if err != nil {
			t.Fatal(err)
		}
		if out, changes, err := c.Wrap(opts); err != nil || string(out) != plain || changes[0].Action != ActSkipped {
			t.Errorf("%s: wrap %v %+v\n%s", v, err, changes, out)
		}
	}
}

// TestSameExecutableWindowsBareName: on Windows a host (Node's spawn,
// CreateProcess) looks for a bare program name in its working directory
// before PATH, so "mcpsign" may run a mcpsign.exe that a cloned
// repository holds: it is not self, whatever PATH says.
func TestSameExecutableWindowsBareName(t *testing.T) {
	real := mcpsignOnPath(t)
	if err := sameExecutable(real, "linux")("mcpsign"); err != nil {
		t.Fatalf("linux, on PATH: %v", err)
	}
	if err := sameExecutable(real, "windows")("mcpsign"); !errors.Is(err, ErrNotSelf) || !strings.Contains(err.Error(), "working directory") {
		t.Errorf("windows, a bare name: %v", err)
	}
	if err := sameExecutable(real, "windows")(real); err != nil {
		t.Errorf("windows, the absolute path: %v", err)
	}
}

// TestBareNameEnvPath: a bare program name is looked up by the host in
// the PATH of the entry's env when it sets one (Node's spawn, Codex), not
// in mcpsign's: an entry that sets PATH and names mcpsign bare is not
// enforced.
func TestBareNameEnvPath(t *testing.T) {
	real := mcpsignOnPath(t)
	want := Want{Self: real, Policy: policy}
	args := `"args": ["proxy", "--policy", "` + policy + `", "--name", "n", "--", "srv"]`
	for _, tc := range []struct {
		env      string
		enforced bool
	}{
		{``, true},
		{`, "env": {"TOKEN": "x"}`, true},
		{`, "env": {"PATH": "${workspaceFolder}/bin:/usr/bin"}`, false},
		{`, "env": {"Path": "C:\\repo\\bin"}`, false},
	} {
		data := `{"mcpServers": {"n": {"command": "mcpsign", ` + args + tc.env + `}}}`
		c, err := Parse(mustHost(t, "claude-code"), ".mcp.json", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if r := want.Check(c.Servers()[0]); (r == "") != tc.enforced {
			t.Errorf("%s: Check = %q, want enforced %v", data, r, tc.enforced)
		}
	}
}

// TestEnvNameWithEquals: a host builds the environment as NAME=VALUE from
// each env member, so a member named "GODEBUG=x509sha1=1" sets GODEBUG: it
// is read as the variable before its first "=".
func TestEnvNameWithEquals(t *testing.T) {
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	for _, name := range []string{"GODEBUG=x509sha1=1", "HOME=/repo/.home", "GOFIPS140=off"} {
		data := `{"servers": {"n": {"command": "` + self + `", "args": ["proxy", "--policy", "` + policy + `", "--name", "n", "--", "srv"], "env": {"` + name + `": ""}}}}`
		c, err := Parse(mustHost(t, "vscode"), ".vscode/mcp.json", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if r := opts.Want().Check(c.Servers()[0]); r == "" {
			t.Errorf("%s: enforced", name)
		}
	}
}

// mcpsignOnPath makes an executable named mcpsign in a directory of its
// own, which is then PATH alone, and returns its path.
func mcpsignOnPath(t *testing.T) string {
	t.Helper()
	real := filepath.Join(t.TempDir(), "bin", "mcpsign")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(real))
	return real
}

// TestWrappedOAuth: the proxy's OAuth flags are read as such (a value that
// is "--" included) and a re-wrap keeps them.
func TestWrappedOAuth(t *testing.T) {
	argv := []string{self, "proxy", "--policy", "/tmp/attacker.json", "--name", "n", "--oauth", "--oauth-redirect-port", "33418", "--oauth-cache-dir", "--", "--no-browser", "--", "https://x.example/mcp"}
	w, ok := ParseWrapped(argv)
	wantOAuth := []string{"--oauth", "--oauth-redirect-port", "33418", "--oauth-cache-dir", "--", "--no-browser"}
	if !ok || !slices.Equal(w.OAuth, wantOAuth) || !slices.Equal(w.Original, []string{"https://x.example/mcp"}) || len(w.Other) != 0 {
		t.Fatalf("ParseWrapped = %+v, %v", w, ok)
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"n": map[string]any{"command": self, "args": argv[1:]}}})
	c, err := Parse(mustHost(t, "claude-desktop"), "claude_desktop_config.json", data)
	if err != nil {
		t.Fatal(err)
	}
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	out, changes, err := c.Wrap(opts)
	if err != nil || len(changes) != 1 || changes[0].Action != ActRewrapped {
		t.Fatalf("wrap: %v %+v", err, changes)
	}
	wc, err := Parse(mustHost(t, "claude-desktop"), "claude_desktop_config.json", out)
	if err != nil {
		t.Fatal(err)
	}
	s := wc.Servers()[0]
	if r := opts.Want().Check(s); r != "" || !slices.Equal(s.Wrapped.OAuth, wantOAuth) || s.Wrapped.Policy != policy {
		t.Fatalf("after wrap: %q %q\n%s", r, s.Argv, out)
	}
}
