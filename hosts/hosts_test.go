package hosts

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	self   = "/opt/mcpsign/bin/mcpsign"
	policy = "/etc/mcpsign/policy.json"
)

// fixtures is one configuration per host, with comments, odd layout,
// interpolation tokens, an entry without args, an empty args, and a remote
// entry.
var fixtures = []struct {
	host string
	file string
	data string
	// stdio are the stdio entries and their argv; remote the remote ones.
	stdio  map[string][]string
	remote map[string]string
}{
	{
		host: "claude-desktop", file: "claude_desktop_config.json",
		data: `{
  "mcpServers": {
    "notes": {
      "command": "/usr/local/bin/npx",
      "args": ["-y", "@acme/notes-mcp@1.2.0"],
      "env": {"NOTES_DIR": "/Users/me/notes"}
    },
    "bare": {"command":"/usr/bin/srv"},
    "esc": {"command": "\u002fbin\/x", "args" : [ ]}
  },
  "globalShortcut": ""
}
`,
		stdio: map[string][]string{"notes": {"/usr/local/bin/npx", "-y", "@acme/notes-mcp@1.2.0"}, "bare": {"/usr/bin/srv"}, "esc": {"/bin/x"}},
	},
	{
		host: "claude-code", file: ".claude.json",
		data: `{
  "numStartups": 12,
  "mcpServers": {
    "top": {"type": "stdio", "command": "npx", "args": [], "env": {}}
  },
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {
        "db": {"type": "stdio", "command": "uvx", "args": ["mcp-db", "--dsn", "${DB_DSN}"]},
        "remote": {"type": "http", "url": "https://mcp.example.com/mcp"}
      }
    },
    "/home/me/other": {"mcpServers": {}}
  }
}`,
		stdio:  map[string][]string{"top": {"npx"}, "db": {"uvx", "mcp-db", "--dsn", "${DB_DSN}"}},
		remote: map[string]string{"remote": "https://mcp.example.com/mcp"},
	},
	{
		host: "vscode", file: ".vscode/mcp.json",
		data: `// VS Code workspace servers
{
	"inputs": [{"type": "promptString", "id": "token", "password": true}],
	"servers": {
		/* the notes server */
		"notes": {
			"type": "stdio",
			"command": "npx",
			"args": [
				// pinned
				"-y", "@acme/notes-mcp@1.2.0",
				"${workspaceFolder}",
			],
			"env": {"TOKEN": "${input:token}"},
		},
		"gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
	},
}
`,
		stdio:  map[string][]string{"notes": {"npx", "-y", "@acme/notes-mcp@1.2.0", "${workspaceFolder}"}},
		remote: map[string]string{"gh": "https://api.githubcopilot.com/mcp/"},
	},
	{
		host: "cursor", file: ".cursor/mcp.json",
		data:   "{\r\n  \"mcpServers\": {\r\n    \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"${env:HOME}\"]},\r\n    \"r\": {\"url\": \"https://x.example/sse\"}\r\n  }\r\n}\r\n",
		stdio:  map[string][]string{"fs": {"npx", "-y", "@modelcontextprotocol/server-filesystem", "${env:HOME}"}},
		remote: map[string]string{"r": "https://x.example/sse"},
	},
	{
		host: "windsurf", file: "mcp_config.json",
		data:   `{"mcpServers":{"git":{"command":"uvx","args":["mcp-server-git"]},"w":{"serverUrl":"https://w.example/mcp"}}}`,
		stdio:  map[string][]string{"git": {"uvx", "mcp-server-git"}},
		remote: map[string]string{"w": "https://w.example/mcp"},
	},
	{
		host: "zed", file: "zed/settings.json",
		data: `// Zed settings
{
  "theme": "One Dark", // keep
  "context_servers": {
    "flat": {"source": "custom", "command": "node", "args": ["/srv/a.js"], "env": {}},
    "nested": {
      "command": {"path": "/usr/bin/b", "args": ["--stdio"], "env": {"K": "v"}},
      "settings": {}
    },
    "ext": {"source": "extension", "settings": {}},
  },
}
`,
		stdio: map[string][]string{"flat": {"node", "/srv/a.js"}, "nested": {"/usr/bin/b", "--stdio"}},
	},
	{
		host: "gemini", file: ".gemini/settings.json",
		data: `{
  "theme": "Default",
  "mcpServers": {
    "py": {"command": "python", "args": ["-m", "my_server"], "cwd": "./srv", "timeout": 30000, "trust": false},
    "h": {"httpUrl": "https://h.example/mcp", "headers": {"Authorization": "Bearer $TOKEN"}}
  }
}
`,
		stdio:  map[string][]string{"py": {"python", "-m", "my_server"}},
		remote: map[string]string{"h": "https://h.example/mcp"},
	},
	{
		host: "codex", file: ".codex/config.toml",
		data: `model = "o3" # the model

# servers
[mcp_servers.docs]
command = "npx"   # launcher
args = ["-y", "mcp-docs@1.0.0"]
env = { "API_KEY" = "value" }

[mcp_servers."with.dot"]
command = 'uvx'
args = [
  "mcp-x",
  "${HOME}",
]

[mcp_servers.bare]
command = "/usr/bin/srv"

[mcp_servers.empty]
command = "srv"
args = []

[mcp_servers.spaced]
  command="srv3"
  args = [ ]

[mcp_servers.remote]
url = "https://r.example/mcp"

[other]
command = "not a server"
`,
		stdio: map[string][]string{"docs": {"npx", "-y", "mcp-docs@1.0.0"}, "with.dot": {"uvx", "mcp-x", "${HOME}"},
			"bare": {"/usr/bin/srv"}, "empty": {"srv"}, "spaced": {"srv3"}},
		remote: map[string]string{"remote": "https://r.example/mcp"},
	},
}

func mustHost(t *testing.T, name string) Host {
	t.Helper()
	h, ok := Lookup(name)
	if !ok {
		t.Fatalf("no host %q", name)
	}
	return h
}

func TestWrapUnwrapEveryHost(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.host, func(t *testing.T) {
			h := mustHost(t, fx.host)
			if got, ok := Infer("/x/" + fx.file); !ok || got.Name != fx.host {
				t.Errorf("Infer(%s) = %q, %v", fx.file, got.Name, ok)
			}
			orig := []byte(fx.data)
			c, err := Parse(h, fx.file, orig)
			if err != nil {
				t.Fatal(err)
			}
			checkServers(t, c.Servers(), fx.stdio, fx.remote, false)

			wrapped, changes, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range changes {
				want := ActWrapped
				if _, ok := fx.stdio[ch.Server.Name]; !ok && fx.remote[ch.Server.Name] == "" {
					want = ActNotEnforced
				}
				if ch.Action != want {
					t.Errorf("%s: %s, want %s", ch.Server.Name, ch.Action, want)
				}
			}
			wc, err := Parse(h, fx.file, wrapped)
			if err != nil {
				t.Fatalf("wrapped file does not parse: %v\n%s", err, wrapped)
			}
			checkServers(t, wc.Servers(), fx.stdio, fx.remote, true)

			// Idempotent: wrap twice is wrap once.
			again, changes, err := wc.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, wrapped) {
				t.Errorf("second wrap changed the file:\n%s\n---\n%s", wrapped, again)
			}
			for _, ch := range changes {
				if _, ok := fx.stdio[ch.Server.Name]; (ok || fx.remote[ch.Server.Name] != "") && ch.Action != ActAlreadyWrapped {
					t.Errorf("second wrap of %s: %s", ch.Server.Name, ch.Action)
				}
			}

			// Unwrap is the exact inverse.
			back, changes, err := wc.Unwrap(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, orig) {
				t.Errorf("wrap then unwrap is not the original:\n%s\n---\n%s", orig, back)
			}
			for _, ch := range changes {
				if _, ok := fx.stdio[ch.Server.Name]; ok && ch.Action != ActUnwrapped {
					t.Errorf("unwrap of %s: %s", ch.Server.Name, ch.Action)
				}
			}
			// Unwrapping an unwrapped file changes nothing.
			same, _, err := c.Unwrap(nil)
			if err != nil || !bytes.Equal(same, orig) {
				t.Errorf("unwrap of an unwrapped file changed it (%v)", err)
			}
			// Outside the edited values, lines are kept: comments too.
			for _, line := range strings.Split(fx.data, "\n") {
				if strings.Contains(line, "//") || strings.Contains(line, "#") || strings.Contains(line, "/*") {
					if !bytes.Contains(wrapped, []byte(strings.TrimSpace(line))) && !strings.Contains(line, "command") && !strings.Contains(line, "args") && !strings.Contains(line, "://") {
						t.Errorf("comment line lost: %q", line)
					}
				}
			}
		})
	}
}

// checkServers compares what was read with the fixture's entries.
func checkServers(t *testing.T, got []Server, stdio map[string][]string, remote map[string]string, wrapped bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range got {
		seen[s.Name] = true
		switch s.Kind {
		case Stdio:
			want, ok := stdio[s.Name]
			if u, remote := remote[s.Name]; remote && wrapped {
				want, ok = []string{u}, true // a remote entry, wrapped
			}
			if !ok {
				t.Errorf("%s: read as stdio", s.Name)
				continue
			}
			if s.Problem != "" {
				t.Errorf("%s: problem %q", s.Name, s.Problem)
			}
			if !wrapped {
				if s.Wrapped != nil || !slices.Equal(s.Argv, want) {
					t.Errorf("%s: argv %q wrapped %v, want %q", s.Name, s.Argv, s.Wrapped, want)
				}
				continue
			}
			if s.Wrapped == nil {
				t.Errorf("%s: not wrapped: %q", s.Name, s.Argv)
				continue
			}
			wantArgv := append([]string{self}, append(wrapPrefix(policy, s.Name, s.Wrapped.Headers, s.Wrapped.OAuth), want...)...)
			if !slices.Equal(s.Argv, wantArgv) || !slices.Equal(s.Wrapped.Original, want) ||
				s.Wrapped.Policy != policy || s.Wrapped.Name != s.Name {
				t.Errorf("%s: wrapped argv %q, want %q", s.Name, s.Argv, wantArgv)
			}
		case Remote:
			if remote[s.Name] != s.URL {
				t.Errorf("%s: remote %q, want %q", s.Name, s.URL, remote[s.Name])
			}
		}
	}
	for n := range stdio {
		if !seen[n] {
			t.Errorf("stdio entry %s not found", n)
		}
	}
	for n := range remote {
		if !seen[n] {
			t.Errorf("remote entry %s not found", n)
		}
	}
}

func TestWrapSelectedServers(t *testing.T) {
	h := mustHost(t, "claude-code")
	c, err := Parse(h, ".claude.json", []byte(fixtures[1].data))
	if err != nil {
		t.Fatal(err)
	}
	out, changes, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf, Servers: []string{"db"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Server.Name != "db" || changes[0].Action != ActWrapped ||
		changes[0].Server.Where != `projects["/home/me/app"].mcpServers` {
		t.Fatalf("changes %+v", changes)
	}
	wc, _ := Parse(h, ".claude.json", out)
	for _, s := range wc.Servers() {
		if (s.Wrapped != nil) != (s.Name == "db") {
			t.Errorf("%s wrapped=%v", s.Name, s.Wrapped != nil)
		}
	}
	if _, _, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf, Servers: []string{"nope"}}); !errors.Is(err, ErrNoServer) {
		t.Errorf("unknown server: %v, want ErrNoServer", err)
	}
}

func TestParseRefused(t *testing.T) {
	for _, tc := range []struct {
		host, data, want string
	}{
		{"vscode", "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\",,}\n  }\n}", "line 3"},
		{"claude-desktop", `[1, 2]`, "top level is not an object"},
		{"codex", "[mcp_servers.a]\ncommand = \n", "line 2"},
	} {
		_, err := Parse(mustHost(t, tc.host), "f", []byte(tc.data))
		if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrParse naming %q", tc.host, err, tc.want)
		}
	}
}

func TestEntriesNotEdited(t *testing.T) {
	for _, tc := range []struct {
		host, data, name, reason string
	}{
		{"cursor", `{"mcpServers": {"a": {"command": "x", "args": ["y", 3]}}}`, "a", "not a string"},
		{"cursor", `{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, "a", "not an array"},
		{"codex", "[mcp_servers]\na = { command = \"x\" }\n", "a", "not written as a [mcp_servers.NAME] table"},
		{"cursor", `{"mcpServers": {"": {"command": "x"}}}`, "", "name is empty"},
		{"gemini", `{"mcpServers": {"a": {"command": ""}}}`, "a", "command is empty"},
		{"codex", "[mcp_servers.a]\ncommand = \"x\"", "a", "last line"},
		{"codex", "[mcp_servers.a]\ncommand = \"\"\"x\"\"\"\n", "a", "one-line string"},
	} {
		c, err := Parse(mustHost(t, tc.host), "f", []byte(tc.data))
		if err != nil {
			t.Fatal(err)
		}
		out, changes, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, []byte(tc.data)) || len(changes) != 1 || changes[0].Action != ActSkipped ||
			!strings.Contains(changes[0].Reason, tc.reason) {
			t.Errorf("%s: %+v, want skipped for %q and the file unchanged", tc.data, changes, tc.reason)
		}
	}
}

func TestUnwrapHandWrapped(t *testing.T) {
	// docs/HOSTS.md's hand-written form: --lock and flags, no --policy.
	data := `{"mcpServers": {"n": {"command": "/usr/local/bin/mcpsign", "args": ["proxy", "--lock", "/l.lock", "--tofu", "--", "/usr/bin/npx", "-y", "p"]}}}`
	c, err := Parse(mustHost(t, "claude-desktop"), "f", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Servers()[0]
	if s.Wrapped == nil || s.Wrapped.Lock != "/l.lock" || !slices.Equal(s.Wrapped.Original, []string{"/usr/bin/npx", "-y", "p"}) {
		t.Fatalf("read %+v", s)
	}
	out, _, err := c.Unwrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"mcpServers": {"n": {"command": "/usr/bin/npx", "args": ["-y", "p"]}}}`; string(out) != want {
		t.Errorf("unwrap: %s, want %s", out, want)
	}
}

func TestSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp_config.json")
	orig := []byte(fixtures[4].data)
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := mustHost(t, "windsurf")
	c, err := Load(ctx, h, path)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
	if err != nil {
		t.Fatal(err)
	}
	held, _ := os.ReadFile(path)
	backup, err := c.Save(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(backup); err != nil || !bytes.Equal(b, held) {
		t.Errorf("backup %s: %v, holds the original %v", backup, err, bytes.Equal(b, held))
	}
	if bfi, err := os.Stat(backup); err != nil || bfi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode: %v %v", bfi, err)
	}
	fi, _ := os.Stat(path)
	got, _ := os.ReadFile(path)
	if fi.Mode().Perm() != 0o600 || !bytes.Equal(got, out) {
		t.Errorf("saved mode %v, content equal %v", fi.Mode().Perm(), bytes.Equal(got, out))
	}
	// c read the original: the file changed since, so Save refuses.
	if _, err := c.Save(ctx, out); !errors.Is(err, ErrChanged) {
		t.Errorf("stale save: %v, want ErrChanged", err)
	}
	// A symbolic link is not written through.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	lc, err := Load(ctx, h, link)
	if err != nil {
		t.Fatal(err)
	}
	un, _, _ := lc.Unwrap(nil)
	if _, err := lc.Save(ctx, un); !errors.Is(err, ErrSymlink) {
		t.Errorf("save through a symlink: %v, want ErrSymlink", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, out) {
		t.Error("the symlink's target changed")
	}
}

func TestPaths(t *testing.T) {
	mac := Env{GOOS: "darwin", Home: "/Users/me", Dir: "/src/app"}
	with := func(e Env, f func(*Env)) Env { f(&e); return e }
	for _, tc := range []struct {
		host string
		env  Env
		want []string
	}{
		{"claude-desktop", mac, []string{"/Users/me/Library/Application Support/Claude/claude_desktop_config.json"}},
		{"claude-desktop", with(mac, func(e *Env) { e.GOOS = "linux" }), []string{"/Users/me/.config/Claude/claude_desktop_config.json"}},
		{"vscode", with(mac, func(e *Env) { e.GOOS = "linux" }), []string{"/Users/me/.config/Code/User/mcp.json", "/Users/me/.config/Code/User/settings.json", "/src/app/.vscode/mcp.json", "/src/app/.vscode/settings.json"}},
		{"vscode", mac, []string{"/Users/me/Library/Application Support/Code/User/mcp.json", "/Users/me/Library/Application Support/Code/User/settings.json", "/src/app/.vscode/mcp.json", "/src/app/.vscode/settings.json"}},
		{"vscode", with(mac, func(e *Env) { e.GOOS, e.AppData, e.Dir = "windows", "/c/AppData/Roaming", "" }), []string{"/c/AppData/Roaming/Code/User/mcp.json", "/c/AppData/Roaming/Code/User/settings.json"}},
		{"vscode", with(mac, func(e *Env) { e.GOOS, e.XDGConfigHome, e.Dir = "linux", "/xdg", "" }), []string{"/xdg/Code/User/mcp.json", "/xdg/Code/User/settings.json"}},
		{"claude-code", with(mac, func(e *Env) { e.GOOS, e.AppData = "windows", `C:\AppData` }), []string{"/Users/me/.claude.json", "/src/app/.mcp.json"}},
		// Codex: $CODEX_HOME/config.toml, ~/.codex by default, then the
		// project's .codex/config.toml.
		{"codex", with(mac, func(e *Env) { e.GOOS = "linux" }), []string{"/Users/me/.codex/config.toml", "/src/app/.codex/config.toml"}},
		{"codex", with(mac, func(e *Env) { e.CodexHome = "/opt/codex-home" }), []string{"/opt/codex-home/config.toml", "/src/app/.codex/config.toml"}},
		{"codex", with(mac, func(e *Env) { e.CodexHome, e.Dir = "/opt/codex-home/", "" }), []string{"/opt/codex-home/config.toml"}},
		{"codex", with(mac, func(e *Env) { e.CodexHome = "rel/home" }), []string{"rel/home/config.toml", "/src/app/.codex/config.toml"}},
		// In the home directory, the project file is the user file: once.
		{"codex", with(mac, func(e *Env) { e.Dir = "/Users/me" }), []string{"/Users/me/.codex/config.toml"}},
		{"cursor", with(mac, func(e *Env) { e.Dir = "/Users/me/" }), []string{"/Users/me/.cursor/mcp.json"}},
	} {
		got := mustHost(t, tc.host).Paths(tc.env)
		for i := range got {
			got[i] = filepath.ToSlash(got[i])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s under %+v: %q, want %q", tc.host, tc.env, got, tc.want)
		}
	}
}

func TestEnvInfer(t *testing.T) {
	env := Env{GOOS: "linux", Home: "/home/me", CodexHome: "/srv/codex"}
	for _, tc := range []struct {
		path, want string // want "" for none
	}{
		{"/srv/codex/config.toml", "codex"},   // $CODEX_HOME, named anything
		{"/srv/codex/./config.toml", "codex"}, // cleaned
		{"/home/me/.codex/config.toml", "codex"},
		{"/elsewhere/config.toml", ""},
		{"/home/me/.cursor/mcp.json", "cursor"},
	} {
		h, ok := env.Infer(filepath.FromSlash(tc.path))
		if ok != (tc.want != "") || h.Name != tc.want {
			t.Errorf("Infer(%s) = %q, %v; want %q", tc.path, h.Name, ok, tc.want)
		}
	}
}

// TestCodexStringsAreNotKeys: a line inside a multi-line string (in the
// server's table or in another one) is text, not a table header nor a key:
// wrap edits only the command and args TOML reads, and a server whose keys
// it cannot find is skipped, never reported wrapped.
func TestCodexStringsAreNotKeys(t *testing.T) {
	h := mustHost(t, "codex")
	const path = "/h/.codex/config.toml"
	wrappedReal := "command = \"" + self + "\"\nargs = [\"proxy\", \"--policy\", \"" + policy + "\", \"--name\", \"notes\", \"--\", \"real\"]\n"
	for _, tc := range []struct {
		name, data string
		action     Action
		want       string // the wrapped file; "" when wrap leaves it as it is
	}{
		{"a command line in a basic multi-line string after the command",
			"[mcp_servers.notes]\ncommand = \"real\"\ndescription = \"\"\"\ncommand = \"fake\"\n\"\"\"\n", ActWrapped,
			"[mcp_servers.notes]\n" + wrappedReal + "description = \"\"\"\ncommand = \"fake\"\n\"\"\"\n"},
		{"an args line in a literal multi-line string",
			"[mcp_servers.notes]\ncommand = \"real\"\nnote = '''\nargs = [\"x\"]\n'''\n", ActWrapped,
			"[mcp_servers.notes]\n" + wrappedReal + "note = '''\nargs = [\"x\"]\n'''\n"},
		{"a header in another table's string",
			"[other]\ns = \"\"\"\n[mcp_servers.notes]\ncommand = \"fake\"\n\"\"\"\n[mcp_servers.notes]\ncommand = \"real\"\n", ActWrapped,
			"[other]\ns = \"\"\"\n[mcp_servers.notes]\ncommand = \"fake\"\n\"\"\"\n[mcp_servers.notes]\n" + wrappedReal},
		{"an escaped quote and a closing with extra quotes",
			"[mcp_servers.notes]\nd = \"\"\"a \\\"\"\" \ncommand = \"fake\"\nb\"\"\"\"\ncommand = \"real\"\n", ActWrapped,
			"[mcp_servers.notes]\nd = \"\"\"a \\\"\"\" \ncommand = \"fake\"\nb\"\"\"\"\n" + wrappedReal},
		{"triple quotes inside a one-line literal string are no string",
			"[mcp_servers.notes]\nd = 'a\"\"\"b' # '''\ncommand = \"real\"\n", ActWrapped,
			"[mcp_servers.notes]\nd = 'a\"\"\"b' # '''\n" + wrappedReal},
		{"the only command in a string",
			"[mcp_servers.notes]\ncommand = \"\"\"real\"\"\"\nd = \"\"\"\ncommand = \"fake\"\n\"\"\"\n", ActSkipped, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(h, path, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			out, changes, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != 1 || changes[0].Action != tc.action {
				t.Fatalf("changes %+v, want one %s", changes, tc.action)
			}
			want := tc.want
			if want == "" {
				want = tc.data
			}
			if string(out) != want {
				t.Errorf("wrapped:\n%s\nwant:\n%s", out, want)
			}
		})
	}
}

// isSelf is the tests' Want.IsSelf: the program self, as written, is
// mcpsign; any other is not.
func isSelf(program string) error {
	if program == self {
		return nil
	}
	return ErrNotSelf
}
