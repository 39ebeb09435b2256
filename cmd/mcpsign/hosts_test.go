package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/hosts"
)

// runHosts runs mcpsign with HOME set to home and no other variable.
func runHosts(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	return runHostsEnv(t, map[string]string{"HOME": home}, args...)
}

// runHostsEnv runs mcpsign with these environment variables only.
func runHostsEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{
		stdin:      strings.NewReader(""),
		stdout:     &out,
		stderr:     &errb,
		getenv:     func(k string) string { return env[k] },
		isTerminal: func() bool { return false },
	}
	code := run(context.Background(), args, a)
	return code, out.String(), errb.String()
}

const hostsFixture = `{
  // user servers
  "mcpServers": {
    "notes": {"command": "npx", "args": ["-y", "@acme/notes@1.2.0", "${workspaceFolder}"]},
    "evil\u202e": {"command": "srv"},
    "web": {"url": "https://mcp.example.com/mcp"}
  }
}
`

func TestHostsCommands(t *testing.T) {
	home := t.TempDir()
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cursor), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cursor, []byte(hostsFixture), 0o640); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(home, "policy.json")
	if err := os.WriteFile(pol, hostsPolicy(), 0o644); err != nil {
		t.Fatal(err)
	}
	self := fakeMcpsign(t)
	read := func() string {
		b, err := os.ReadFile(cursor)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// list finds the file under HOME, escapes names, reports the remote one.
	code, out, stderr := runHosts(t, home, "hosts", "list", "--host", "cursor")
	if code != 0 {
		t.Fatalf("list: %d %s", code, stderr)
	}
	for _, want := range []string{cursor + " (cursor)", `"notes" (mcpServers): stdio, NOT WRAPPED`, `"evil\u{202E}"`, `"web" (mcpServers): remote "https://mcp.example.com/mcp", NOT WRAPPED`} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\u202e") {
		t.Error("list printed a bidirectional control raw")
	}

	// wrap needs --policy.
	if code, _, stderr := runHosts(t, home, "hosts", "wrap", "--host", "cursor"); code != 2 || !strings.Contains(stderr, "--policy") {
		t.Errorf("wrap without --policy: %d %s", code, stderr)
	}

	// --dry-run prints the diff and changes nothing.
	code, out, stderr = runHosts(t, home, "hosts", "wrap", "--host", "cursor", "--policy", pol, "--mcpsign-path", self, "--dry-run")
	if code != 0 {
		t.Fatalf("dry run: %d %s", code, stderr)
	}
	if read() != hostsFixture {
		t.Error("--dry-run changed the file")
	}
	wantLine := `+    "notes": {"command": "` + self + `", "args": ["proxy", "--policy", "` + pol + `", "--name", "notes", "--", "npx", "-y", "@acme/notes@1.2.0", "${workspaceFolder}"]},`
	if !strings.Contains(out, "--- "+cursor) || !strings.Contains(out, wantLine) || !strings.Contains(out, `-    "notes": {"command": "npx"`) {
		t.Errorf("dry-run diff:\n%s\nwant %s", out, wantLine)
	}

	// wrap writes it, keeps the mode; a second wrap changes nothing.
	code, out, stderr = runHosts(t, home, "hosts", "wrap", "--config", cursor, "--policy", pol, "--mcpsign-path", self)
	if code != 0 || !strings.Contains(out, `"web" (mcpServers): wrapped`) {
		t.Fatalf("wrap: %d %s %s", code, out, stderr)
	}
	wrapped := read()
	if !strings.Contains(wrapped, wantLine[1:]) || !strings.Contains(wrapped, "// user servers") {
		t.Errorf("wrapped file:\n%s", wrapped)
	}
	if fi, _ := os.Stat(cursor); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if code, out, _ := runHosts(t, home, "hosts", "wrap", "--config", cursor, "--policy", pol, "--mcpsign-path", self); code != 0 || read() != wrapped || !strings.Contains(out, "already wrapped") {
		t.Errorf("second wrap: %d %s", code, out)
	}

	// list --format json reports the wrapped entries.
	code, out, _ = runHosts(t, home, "hosts", "list", "--config", cursor, "--mcpsign", self, "--format", "json")
	var got hosts.ListReport
	// "evil\u202e" is no name a policy can give rules for: wrap left it
	// alone, and it is not enforced.
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Files) != 1 || !strings.HasPrefix(out, "{\n  \"reportVersion\": 1,") || got.Enforced {
		t.Fatalf("list json: %d %v %s", code, err, out)
	}
	byName := map[string]hosts.ServerReport{}
	for _, s := range got.Files[0].Servers {
		byName[s.Name] = s
	}
	if e := byName["evil\u202e"]; e.Wrapped || e.Enforced {
		t.Errorf("evil: %+v", e)
	}
	if n := byName["notes"]; !n.Wrapped || !n.Enforced || n.Policy != pol || n.PolicyName != "notes" ||
		n.PolicyStatus != "not checked" || strings.Join(n.Original, " ") != "npx -y @acme/notes@1.2.0 ${workspaceFolder}" {
		t.Errorf("notes: %+v", n)
	}
	if w := byName["web"]; w.Kind != "stdio" || !w.Enforced || w.Remote != "https://mcp.example.com/mcp" {
		t.Errorf("web: %+v", w)
	}

	// unwrap --server only that one; then all: the original bytes.
	if code, _, stderr := runHosts(t, home, "hosts", "unwrap", "--config", cursor, "--server", "notes"); code != 0 || !strings.Contains(read(), `"notes": {"command": "npx"`) || !strings.Contains(read(), `"command": "`+self+`"`) {
		t.Errorf("unwrap --server: %d %s\n%s", code, stderr, read())
	}
	if code, _, stderr := runHosts(t, home, "hosts", "unwrap", "--config", cursor); code != 0 || read() != hostsFixture {
		t.Errorf("unwrap: %d %s\n%s", code, stderr, read())
	}
	if code, _, stderr := runHosts(t, home, "hosts", "unwrap", "--config", cursor, "--server", "nope"); code != 2 || !strings.Contains(stderr, `no such server "nope"`) {
		t.Errorf("unknown server: %d %s", code, stderr)
	}
}

func TestHostsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "claude_desktop_config.json")
	content := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}\n"
	if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "p.json")
	os.WriteFile(pol, hostsPolicy(), 0o644)
	code, _, stderr := runHosts(t, dir, "hosts", "wrap", "--config", bad, "--policy", pol, "--mcpsign", fakeMcpsign(t))
	if code != 2 || !strings.Contains(stderr, "line 3") || !strings.Contains(stderr, "file left untouched") {
		t.Errorf("unparseable: %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(bad); string(b) != content {
		t.Error("an unparseable file was changed")
	}
	if code, _, stderr := runHosts(t, dir, "hosts", "list", "--config", filepath.Join(dir, "x.json")); code != 2 || !strings.Contains(stderr, "add --host") {
		t.Errorf("unknown file name: %d %s", code, stderr)
	}
	if code, _, stderr := runHosts(t, dir, "hosts", "list", "--host", "nano"); code != 2 || !strings.Contains(stderr, "unknown host") {
		t.Errorf("unknown host: %d %s", code, stderr)
	}
	// A symlinked configuration is not written through.
	good := filepath.Join(dir, "real.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o644)
	link := filepath.Join(dir, "link", "claude_desktop_config.json")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runHosts(t, dir, "hosts", "wrap", "--config", link, "--policy", pol, "--mcpsign", fakeMcpsign(t))
	if code != 2 || !strings.Contains(stderr, "symbolic link") || strings.Contains(out, "wrapped") {
		t.Errorf("symlink: %d %s\n%s", code, stderr, out)
	}
}

// TestHostsCheck: list --check exits 1 when any server is not enforced under
// the policy (a lookalike, another policy, a remote one not wrapped), 0
// when every one is, 2 without --policy; wrap --dry-run says "would"; a
// header's literal value is printed by none of list, wrap and --dry-run.
func TestHostsCheck(t *testing.T) {
	dir := t.TempDir()
	self := fakeMcpsign(t)
	pol := filepath.Join(dir, "policy.json")
	other := filepath.Join(dir, "other.json")
	for _, p := range []string{pol, other} {
		if err := os.WriteFile(p, hostsPolicy(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(config), 0o755)
	const secret = "sk-live-0123456789"
	original := `{
	"servers": {
		"evil": {"command": "./evil/mcpsign", "args": ["proxy", "--", "node", "s.js"]},
		"other": {"command": ` + quote(self) + `, "args": ["proxy", "--policy", ` + quote(other) + `, "--name", "other", "--", "srv"]},
		"web": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ` + secret + `"}},
	},
}
`
	if err := os.WriteFile(config, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(args ...string) (int, string, string) {
		return runHosts(t, dir, append([]string{"hosts", "list", "--config", config, "--mcpsign", self}, args...)...)
	}
	noSecret := func(what, out string) {
		t.Helper()
		if strings.Contains(out, secret) || strings.Contains(out, "0123456789") {
			t.Errorf("%s printed the header's value:\n%s", what, out)
		}
	}
	if code, _, stderr := check("--check"); code != 2 || !strings.Contains(stderr, "--policy") {
		t.Errorf("--check without --policy: %d %s", code, stderr)
	}
	code, out, stderr := check("--policy", pol, "--check")
	if code != 1 || !strings.Contains(out, `"evil" (servers): stdio "node" "s.js", wrapped, NOT ENFORCED: its command is not this mcpsign`) ||
		!strings.Contains(out, `wrapper "./evil/mcpsign"`) || !strings.Contains(out, "not "+pol) || !strings.Contains(stderr, "not enforced") {
		t.Errorf("--check: %d %s\n%s", code, stderr, out)
	}
	noSecret("list", out)
	// Without --check, list reports and exits 0; any policy: "other" is
	// enforced under its own.
	if code, out, _ := check(); code != 0 || !strings.Contains(out, `"other" (servers): stdio "srv", enforced`) {
		t.Errorf("list: %d\n%s", code, out)
	}

	code, out, _ = runHosts(t, dir, "hosts", "wrap", "--config", config, "--policy", pol, "--mcpsign", self, "--dry-run")
	if code != 0 || !strings.Contains(out, config+" (vscode)") || !strings.Contains(out, `"evil" (servers): would re-wrap: its command is not this mcpsign`) ||
		!strings.Contains(out, `"web" (servers): would wrap`) || strings.Contains(out, ": wrapped") || !strings.Contains(out, "<redacted>") {
		t.Errorf("--dry-run: %d\n%s", code, out)
	}
	noSecret("--dry-run", out)
	if b, _ := os.ReadFile(config); string(b) != original {
		t.Fatal("--dry-run wrote")
	}
	code, out, stderr = runHosts(t, dir, "hosts", "wrap", "--config", config, "--policy", pol, "--mcpsign", self)
	if code != 0 || !strings.Contains(out, `"evil" (servers): re-wrapped`) || !strings.Contains(out, `"other" (servers): re-wrapped: it runs under the policy`) ||
		!strings.Contains(out, `"web" (servers): wrapped`) {
		t.Errorf("wrap: %d %s\n%s", code, stderr, out)
	}
	noSecret("wrap", out+stderr)
	code, out, stderr = check("--policy", pol, "--check", "--format", "json")
	var got hosts.ListReport
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || !got.Enforced || got.Policy != pol {
		t.Errorf("--check after wrap: %d %v %s\n%s", code, err, stderr, out)
	}
	noSecret("list --format json", out)
	if !strings.Contains(out, `"headers": [`) || !strings.Contains(out, `"Authorization"`) {
		t.Errorf("list does not name the headers:\n%s", out)
	}
	if code, out, _ := check("--policy", other, "--check"); code != 1 || !strings.Contains(out, "not "+other) {
		t.Errorf("--check under another policy: %d\n%s", code, out)
	}
	// Re-wrapped under another policy: the diff shows the wrapped remote
	// entry's lines, never its header's value.
	code, out, _ = runHosts(t, dir, "hosts", "wrap", "--config", config, "--policy", other, "--mcpsign", self, "--dry-run")
	if code != 0 || !strings.Contains(out, `"web" (servers): would re-wrap`) || !strings.Contains(out, "+\t\t\"web\"") {
		t.Errorf("--dry-run under another policy: %d\n%s", code, out)
	}
	noSecret("--dry-run of a re-wrap", out)
}

// TestHostsCodexHome: Codex's user file is $CODEX_HOME/config.toml when
// CODEX_HOME is set, ~/.codex/config.toml when it is not, and --config
// knows $CODEX_HOME/config.toml for Codex's whatever its directory is called.
func TestHostsCodexHome(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	codexHome := filepath.Join(dir, "codex-state")
	files := map[string]string{
		filepath.Join(home, ".codex", "config.toml"): "[mcp_servers.default_home]\ncommand = \"a\"\n",
		filepath.Join(codexHome, "config.toml"):      "[mcp_servers.codex_home]\ncommand = \"b\"\n",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		args      []string
		want, not string
	}{
		{"CODEX_HOME set", map[string]string{"HOME": home, "CODEX_HOME": codexHome}, []string{"--host", "codex"},
			filepath.Join(codexHome, "config.toml") + " (codex)", "default_home"},
		{"CODEX_HOME unset", map[string]string{"HOME": home}, []string{"--host", "codex"},
			filepath.Join(home, ".codex", "config.toml") + " (codex)", "codex_home"},
		{"CODEX_HOME empty", map[string]string{"HOME": home, "CODEX_HOME": ""}, []string{"--host", "codex"},
			`"default_home"`, "codex_home"},
		{"--config inferred", map[string]string{"HOME": home, "CODEX_HOME": codexHome}, []string{"--config", filepath.Join(codexHome, "config.toml")},
			`"codex_home" (mcp_servers): stdio, NOT WRAPPED`, "default_home"},
	} {
		code, out, stderr := runHostsEnv(t, tc.env, append([]string{"hosts", "list"}, tc.args...)...)
		if code != 0 || !strings.Contains(out, tc.want) || strings.Contains(out, tc.not) {
			t.Errorf("%s: %d %s %s\nwant %q and no %q", tc.name, code, out, stderr, tc.want, tc.not)
		}
	}
	// Without CODEX_HOME, a config.toml outside .codex/ names no host.
	if code, _, stderr := runHosts(t, home, "hosts", "list", "--config", filepath.Join(codexHome, "config.toml")); code != 2 || !strings.Contains(stderr, "add --host") {
		t.Errorf("config.toml outside CODEX_HOME: %d %s", code, stderr)
	}
}

// TestHostsVSCodeSettings: VS Code's user settings.json is found under
// HOME, its "mcp" servers are listed, --dry-run changes nothing, and wrap,
// wrap again and unwrap write hosts' golden files byte for byte.
func TestHostsVSCodeSettings(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the user settings.json is under $XDG_CONFIG_HOME on Linux only")
	}
	golden := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "hosts", "testdata", "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	home := t.TempDir()
	settings := filepath.Join(home, ".config", "Code", "User", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := golden("vscode-settings.json")
	if err := os.WriteFile(settings, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(home, "policy.json")
	if err := os.WriteFile(pol, hostsPolicy(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The golden file was wrapped with this policy path and binary.
	self := fakeMcpsign(t)
	want := bytes.ReplaceAll(golden("vscode-settings.wrapped.json"), []byte("/etc/mcpsign/policy.json"), []byte(pol))
	want = bytes.ReplaceAll(want, []byte("/opt/mcpsign/bin/mcpsign"), []byte(self))
	read := func() []byte {
		b, err := os.ReadFile(settings)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	code, out, stderr := runHosts(t, home, "hosts", "list", "--host", "vscode")
	if code != 0 || !strings.Contains(out, settings+" (vscode)") || !strings.Contains(out, `"notes" (mcp.servers): stdio, NOT WRAPPED`) ||
		!strings.Contains(out, `"github" (mcp.servers): remote`) {
		t.Fatalf("list: %d %s %s", code, out, stderr)
	}

	code, out, stderr = runHosts(t, home, "hosts", "wrap", "--host", "vscode", "--policy", pol, "--mcpsign-path", self, "--dry-run")
	if code != 0 || !bytes.Equal(read(), orig) {
		t.Fatalf("--dry-run: %d %s, file unchanged %v", code, stderr, bytes.Equal(read(), orig))
	}
	if !strings.Contains(out, `+			"time": {"command": "`+self+`", "args": ["proxy","--policy","`+pol) {
		t.Errorf("--dry-run diff:\n%s", out)
	}

	if code, _, stderr := runHosts(t, home, "hosts", "wrap", "--host", "vscode", "--policy", pol, "--mcpsign-path", self); code != 0 || !bytes.Equal(read(), want) {
		t.Fatalf("wrap: %d %s\n%s", code, stderr, read())
	}
	if code, out, _ := runHosts(t, home, "hosts", "wrap", "--config", settings, "--policy", pol, "--mcpsign-path", self); code != 0 || !bytes.Equal(read(), want) || !strings.Contains(out, "already wrapped") {
		t.Errorf("second wrap: %d %s", code, out)
	}
	if code, _, stderr := runHosts(t, home, "hosts", "unwrap", "--host", "vscode"); code != 0 || !bytes.Equal(read(), orig) {
		t.Errorf("unwrap: %d %s\n%s", code, stderr, read())
	}
}

// TestHostsVSCodeDottedOverride: a wrapped VS Code server whose command a
// dotted setting replaces is not reported wrapped (VS Code runs "evil"),
// and wrap does not touch the file.
func TestHostsVSCodeDottedOverride(t *testing.T) {
	home := t.TempDir()
	settings := filepath.Join(home, ".vscode", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(home, "policy.json")
	if err := os.WriteFile(pol, hostsPolicy(), 0o644); err != nil {
		t.Fatal(err)
	}
	data := `{"mcp": {"servers": {"notes": {"command": "/opt/mcpsign/bin/mcpsign", "args": ["proxy", "--policy", "` + pol + `", "--name", "notes", "--", "node"]}}},
  "mcp.servers.notes.command": "evil"}`
	if err := os.WriteFile(settings, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runHosts(t, home, "hosts", "list", "--config", settings, "--format", "json")
	var got struct {
		Files []hosts.FileReport `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Files) != 1 || len(got.Files[0].Servers) != 2 {
		t.Fatalf("list json: %d %v %s %s", code, err, out, stderr)
	}
	for _, s := range got.Files[0].Servers {
		if s.Name != "notes" || s.Wrapped || s.Enforced || !strings.Contains(s.Problem, `"mcp.servers.notes.command"`) {
			t.Errorf("server %+v: want notes, not wrapped, its problem naming the dotted setting", s)
		}
	}
	runHosts(t, home, "hosts", "wrap", "--config", settings, "--policy", pol, "--mcpsign", fakeMcpsign(t))
	if b, err := os.ReadFile(settings); err != nil || string(b) != data {
		t.Errorf("wrap changed the file (%v):\n%s", err, b)
	}
}

// fakeMcpsign is an executable file named mcpsign in a new directory: what
// --mcpsign names in tests that never start it.
func fakeMcpsign(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bin", "mcpsign")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHostsEveryFormat: for the golden file of every host format, wrap
// --dry-run says what it would do and writes nothing, wrap writes the
// golden file, says what it did after the write, and a second wrap changes
// nothing; list --check exits 1 before (a lookalike, remote entries) and
// unwrap gives the file the lookalikes unwrapped.
func TestHostsEveryFormat(t *testing.T) {
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "hosts", "testdata", "golden", "hosts", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct{ host, file string }{
		{"claude-desktop", "claude-desktop.json"}, {"claude-code", "claude-code.json"}, {"vscode", "vscode.json"},
		{"cursor", "cursor.json"}, {"windsurf", "windsurf.json"}, {"zed", "zed.json"}, {"gemini", "gemini.json"},
		{"codex", "codex.toml"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			self := fakeMcpsign(t)
			pol := filepath.Join(dir, "policy.json")
			os.WriteFile(pol, hostsPolicy(), 0o644)
			subst := strings.NewReplacer("/opt/mcpsign/bin/mcpsign", self, "/etc/mcpsign/policy.json", pol)
			ext := filepath.Ext(tc.file)
			orig := subst.Replace(golden(tc.file))
			want := subst.Replace(golden(strings.TrimSuffix(tc.file, ext) + ".wrapped" + ext))
			config := filepath.Join(dir, "config"+ext)
			if err := os.WriteFile(config, []byte(orig), 0o600); err != nil {
				t.Fatal(err)
			}
			read := func() string { b, _ := os.ReadFile(config); return string(b) }
			args := []string{"--host", tc.host, "--config", config}
			if code, _, _ := runHosts(t, dir, append([]string{"hosts", "list", "--policy", pol, "--mcpsign", self, "--check"}, args...)...); code != 1 {
				t.Errorf("list --check before wrap: exit %d, want 1", code)
			}
			code, out, stderr := runHosts(t, dir, append([]string{"hosts", "wrap", "--policy", pol, "--mcpsign", self, "--dry-run"}, args...)...)
			if code != 0 || read() != orig || !strings.Contains(out, config+" ("+tc.host+")") || !strings.Contains(out, ": would wrap") ||
				!strings.Contains(out, ": would re-wrap") || strings.Contains(out, ": wrapped") || strings.Contains(out, ": re-wrapped") {
				t.Fatalf("--dry-run: exit %d %s\n%s", code, stderr, out)
			}
			code, out, stderr = runHosts(t, dir, append([]string{"hosts", "wrap", "--policy", pol, "--mcpsign", self}, args...)...)
			if code != 0 || read() != want || !strings.Contains(out, ": wrapped") || !strings.Contains(out, ": re-wrapped") {
				t.Fatalf("wrap: exit %d %s\n%s\n%s", code, stderr, out, read())
			}
			if code, out, _ := runHosts(t, dir, append([]string{"hosts", "wrap", "--policy", pol, "--mcpsign", self}, args...)...); code != 0 || read() != want ||
				strings.Contains(out, ": wrapped") || strings.Contains(out, ": re-wrapped") {
				t.Errorf("wrap twice: exit %d\n%s", code, out)
			}
			if code, _, stderr := runHosts(t, dir, append([]string{"hosts", "unwrap"}, args...)...); code != 0 {
				t.Fatalf("unwrap: exit %d %s", code, stderr)
			}
			if code, out, _ := runHosts(t, dir, append([]string{"hosts", "list", "--format", "json"}, args...)...); code != 0 || strings.Contains(out, `"wrapped": true`) {
				t.Errorf("after unwrap: exit %d\n%s", code, out)
			}
		})
	}
}

// TestHostsURLUserinfo: a remote URL's user info (a password, or a token
// given as the user name) is printed by no hosts command: not by list, as
// text or JSON, before or after wrap, nor in wrap --dry-run's diff.
func TestHostsURLUserinfo(t *testing.T) {
	dir := t.TempDir()
	self := fakeMcpsign(t)
	pol := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pol, hostsPolicy(), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(config), 0o755)
	const pw, tok = "pw-0123456789", "ghp_tok987654321"
	data := `{"mcpServers": {
	"a": {"url": "https://alice:` + pw + `@mcp.example.com/mcp"},
	"b": {"url": "https://` + tok + `@mcp.example.com/mcp"}
}}
`
	if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--config", config, "--mcpsign", self}
	noSecret := func(what string, outs ...string) {
		t.Helper()
		for _, out := range outs {
			if strings.Contains(out, pw) || strings.Contains(out, tok) {
				t.Errorf("%s printed the URL's user info:\n%s", what, out)
			}
		}
	}
	for _, f := range []string{"text", "json"} {
		_, out, errOut := runHosts(t, dir, append([]string{"hosts", "list", "--format", f}, base...)...)
		noSecret("list --format "+f, out, errOut)
		if !strings.Contains(out, "mcp.example.com") {
			t.Errorf("list --format %s does not name the host:\n%s", f, out)
		}
	}
	code, out, errOut := runHosts(t, dir, append([]string{"hosts", "wrap", "--policy", pol, "--dry-run"}, base...)...)
	noSecret("wrap --dry-run", out, errOut)
	if code != 0 {
		t.Fatalf("wrap --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runHosts(t, dir, append([]string{"hosts", "wrap", "--policy", pol}, base...)...)
	noSecret("wrap", out, errOut)
	if code != 0 {
		t.Fatalf("wrap: exit %d\n%s%s", code, out, errOut)
	}
	for _, f := range []string{"text", "json"} {
		_, out, errOut := runHosts(t, dir, append([]string{"hosts", "list", "--format", f, "--policy", pol}, base...)...)
		noSecret("list after wrap --format "+f, out, errOut)
	}
	_, out, errOut = runHosts(t, dir, append([]string{"hosts", "unwrap", "--dry-run"}, base...)...)
	noSecret("unwrap --dry-run", out, errOut)
}

// TestHostsListCheckTruth: list --check never passes, nor does its JSON
// say "enforced": true, for what it did not see: a --server that no file
// has, or a file it could not read.
func TestHostsListCheckTruth(t *testing.T) {
	dir := t.TempDir()
	self := fakeMcpsign(t)
	pol := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pol, hostsPolicy(), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(config), 0o755)
	if err := os.WriteFile(config, []byte(`{"servers": {"notes2": {"command": "srv"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"hosts", "list", "--config", config, "--mcpsign", self, "--policy", pol, "--check"}
	for _, f := range []string{"text", "json"} {
		code, out, errOut := runHosts(t, dir, append(base, "--server", "notes", "--format", f)...)
		if code == 0 || !strings.Contains(errOut, `"notes"`) {
			t.Errorf("--server notes, which no file has, --format %s: exit %d\n%s%s", f, code, out, errOut)
		}
	}
	if err := os.WriteFile(config, []byte(`{"servers": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runHosts(t, dir, append(base, "--format", "json")...)
	var report struct{ Enforced bool }
	if err := json.Unmarshal([]byte(out), &report); err != nil || report.Enforced || code == 0 {
		t.Errorf("an unreadable file: exit %d, %v, enforced %v\n%s", code, err, report.Enforced, out)
	}
}

// hostsTestNames are the servers of the hosts tests' configuration files
// that their policy names, so that wrap wraps them (docs/HOSTS.md: a
// server the policy does not name is left alone).
var hostsTestNames = []string{"a", "audit-mode", "bare", "db", "docs", "evil", "figma", "flat", "fs", "gh", "git", "github", "h", "lookalike", "nested", "notes", "other", "other-name", "other-policy", "py", "remote", "time", "tofu", "w", "web"}

// hostsPolicy is a policy that names hostsTestNames (and names), each
// pinned on first use.
func hostsPolicy(names ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"kind":"mcpsign.policy","policyVersion":1,"defaults":{"unsigned":"tofu"},"servers":{`)
	for i, n := range append(slices.Clone(hostsTestNames), names...) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.Quote(n) + ":{}")
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// TestHostsPolicyUnnamedServer: wrap --policy P leaves a server P does not
// name as it is, and says so (wrapped, the host could not start it: the
// proxy refuses a name its policy does not list); list --check does not
// call it enforced, nor one wrapped under P by hand.
func TestHostsPolicyUnnamedServer(t *testing.T) {
	dir := t.TempDir()
	self := fakeMcpsign(t)
	pol := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(config), 0o755)
	original := `{"mcpServers": {
  "notes": {"command": "notes-server"},
  "scratch": {"command": "scratch-server"},
  "byhand": {"command": ` + quote(self) + `, "args": ["proxy", "--policy", ` + quote(pol) + `, "--name", "byhand", "--", "srv"]}
}}
`
	if err := os.WriteFile(config, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runHosts(t, dir, "hosts", "wrap", "--config", config, "--policy", pol, "--mcpsign", self)
	if code != 0 || !strings.Contains(out, `"notes" (mcpServers): wrapped`) ||
		!strings.Contains(out, `"scratch" (mcpServers): SKIPPED: the proxy would refuse to start it: no such server in the policy: "scratch"`) ||
		!strings.Contains(out, `"byhand" (mcpServers): NOT ENFORCED: the proxy would refuse to start it`) {
		t.Errorf("wrap: %d %s\n%s", code, stderr, out)
	}
	b, _ := os.ReadFile(config)
	if !strings.Contains(string(b), `"scratch": {"command": "scratch-server"}`) || strings.Count(string(b), `"--name"`) != 2 {
		t.Errorf("wrap changed the server the policy does not name:\n%s", b)
	}
	code, out, _ = runHosts(t, dir, "hosts", "list", "--config", config, "--policy", pol, "--mcpsign", self, "--check")
	if code != 1 || !strings.Contains(out, `"notes" (mcpServers): stdio "notes-server", enforced`) ||
		!strings.Contains(out, `"byhand" (mcpServers): stdio "srv", wrapped, NOT ENFORCED: the proxy would refuse to start it`) {
		t.Errorf("list --check: %d\n%s", code, out)
	}
	// A policy that cannot be read is an error, before any file is touched.
	if code, _, stderr := runHosts(t, dir, "hosts", "wrap", "--config", config, "--policy", config, "--mcpsign", self); code != 2 || !strings.Contains(stderr, "--policy") {
		t.Errorf("wrap, not a policy: %d %s", code, stderr)
	}
}
