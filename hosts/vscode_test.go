package hosts

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// vscodeSettings are the golden settings.json files: each NAME.json wraps
// to NAME.wrapped.json (testdata/golden).
var vscodeSettings = []struct {
	file string
	// path is where VS Code keeps such a file.
	path string
	// where is each server's map; a name not in it must not be read.
	where map[string]string
}{
	{"vscode-settings.json", "/home/me/.config/Code/User/settings.json",
		map[string]string{"notes": "mcp.servers", "time": "mcp.servers", "bare": "mcp.servers", "github": "mcp.servers"}},
	{"vscode-workspace-settings.json", "/src/app/.vscode/settings.json",
		map[string]string{"db": `["mcp.servers"]`, "fs": "mcp.mcpServers"}},
}

var updateGolden = flag.Bool("update", false, "write the golden files from what the code does")

func writeGolden(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("testdata", "golden", name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVSCodeSettingsGolden: VS Code's settings.json keeps servers under
// "mcp"; wrap writes the golden file, wrap twice is wrap once, unwrap gives
// the original bytes, and nothing outside the "mcp" members changes.
func TestVSCodeSettingsGolden(t *testing.T) {
	for _, tc := range vscodeSettings {
		t.Run(tc.file, func(t *testing.T) {
			orig := readGolden(t, tc.file)
			want := readGolden(t, strings.TrimSuffix(tc.file, ".json")+".wrapped.json")
			h, ok := Infer(filepath.FromSlash(tc.path))
			if !ok || h.Name != "vscode" {
				t.Fatalf("Infer(%s) = %q, %v", tc.path, h.Name, ok)
			}
			c, err := Parse(h, tc.path, orig)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, s := range c.Servers() {
				got[s.Name] = s.Where
			}
			if len(got) != len(tc.where) {
				t.Errorf("servers %v, want %v", got, tc.where)
			}
			for n, w := range tc.where {
				if got[n] != w {
					t.Errorf("%s: where %q, want %q", n, got[n], w)
				}
			}

			wrapped, _, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
			if err != nil {
				t.Fatal(err)
			}
			if *updateGolden {
				writeGolden(t, strings.TrimSuffix(tc.file, ".json")+".wrapped.json", wrapped)
			} else if !bytes.Equal(wrapped, want) {
				t.Errorf("wrap is not the golden file:\n%s", wrapped)
			}
			wc, err := Parse(h, tc.path, wrapped)
			if err != nil {
				t.Fatal(err)
			}
			if again, _, err := wc.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}); err != nil || !bytes.Equal(again, wrapped) {
				t.Errorf("wrap twice is not wrap once (%v):\n%s", err, again)
			}
			if back, _, err := wc.Unwrap(nil); err != nil || !bytes.Equal(back, orig) {
				t.Errorf("wrap then unwrap is not the original (%v):\n%s", err, back)
			}
			// Byte for byte outside the edited members: all before the
			// first "mcp member and all from the "after mcp" comment on.
			head := orig[:bytes.Index(orig, []byte(`"mcp`))]
			tail := orig[bytes.Index(orig, []byte("// after mcp")):]
			if !bytes.HasPrefix(wrapped, head) || !bytes.HasSuffix(wrapped, tail) {
				t.Error("wrap changed bytes outside the mcp members")
			}
		})
	}
}

// TestVSCodeSettingsMaps: the maps are chosen by the file's name, so the
// top-level "servers" of a settings.json and the "mcp" of an mcp.json are
// not servers, and a settings.json elsewhere is not VS Code's.
func TestVSCodeSettingsMaps(t *testing.T) {
	h := mustHost(t, "vscode")
	data := []byte(`{"servers": {"top": {"command": "a"}}, "mcp": {"servers": {"nested": {"command": "b"}}}, "mcpServers": {"m": {"command": "c"}}}`)
	for _, tc := range []struct {
		path, want string
	}{
		{"/p/.vscode/settings.json", "nested"},
		{"/p/.vscode/mcp.json", "top m"},
	} {
		c, err := Parse(h, tc.path, data)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range c.Servers() {
			names = append(names, s.Name)
		}
		if strings.Join(names, " ") != tc.want {
			t.Errorf("%s: servers %q, want %s", tc.path, names, tc.want)
		}
	}
	for _, tc := range []struct {
		path, want string // want "" for none
	}{
		{"/home/me/.config/Code/User/settings.json", "vscode"},
		{"/Users/me/Library/Application Support/Code/User/settings.json", "vscode"},
		{"/p/.vscode/settings.json", "vscode"},
		{"/home/me/.config/Cursor/User/settings.json", ""},
		{"/home/me/User/settings.json", ""},
		{"/home/me/.config/zed/settings.json", "zed"},
	} {
		got, ok := Infer(filepath.FromSlash(tc.path))
		if ok != (tc.want != "") || got.Name != tc.want {
			t.Errorf("Infer(%s) = %q, %v; want %q", tc.path, got.Name, ok, tc.want)
		}
	}
}

// TestVSCodeSettingsDotted: VS Code splits every dotted top-level setting
// name, so "mcp.servers.NAME" (or "mcp.servers.NAME.command") is server
// NAME, or a member of it, beside or over the one in the "mcp" map. Such an
// entry is listed and never edited, and a map entry it changes is not
// wrapped nor reported wrapped: what VS Code runs is not that entry alone.
func TestVSCodeSettingsDotted(t *testing.T) {
	h := mustHost(t, "vscode")
	const path = "/p/.vscode/settings.json"
	wrappedNotes := `{"command": "` + self + `", "args": ["proxy", "--policy", "` + policy + `", "--name", "notes", "--", "node", "s.js"]}`
	type want struct {
		where, problem string
		wrapped        bool
	}
	for _, tc := range []struct {
		name string
		data string
		want []want // in Servers order
	}{
		{"a server only under a dotted name",
			`{"mcp.servers.evil": {"command": "evil"}}`,
			[]want{{`["mcp.servers.evil"]`, `dotted setting "mcp.servers.evil" is server "evil"`, false}}},
		{"a dotted server over a wrapped one",
			`{"mcp": {"servers": {"notes": ` + wrappedNotes + `}}, "mcp.servers.notes": {"command": "evil"}}`,
			[]want{{"mcp.servers", `"mcp.servers.notes" changes this server`, false}, {`["mcp.servers.notes"]`, `dotted setting "mcp.servers.notes" is server "notes"`, false}}},
		{"a dotted command of a wrapped one",
			`{"mcp": {"servers": {"notes": ` + wrappedNotes + `}}, "mcp.servers.notes.command": "evil"}`,
			[]want{{"mcp.servers", `"mcp.servers.notes.command" changes this server`, false}, {`["mcp.servers.notes.command"]`, `dotted setting "mcp.servers.notes.command" changes server "notes"`, false}}},
		{"a dotted mcpServers map",
			`{"mcp.mcpServers": {"fs": {"command": "fs"}}}`,
			[]want{{`["mcp.mcpServers"]`, "", false}}},
		{"a dotted server of the dotted map",
			`{"mcp.servers": {"notes": ` + wrappedNotes + `}, "mcp.mcpServers.notes": {"url": "https://example.com"}}`,
			[]want{{`["mcp.servers"]`, `"mcp.mcpServers.notes" changes this server`, false}, {`["mcp.mcpServers.notes"]`, `dotted setting "mcp.mcpServers.notes" is server "notes"`, false}}},
		{"other dotted settings are no servers",
			`{"mcp.inputs": [], "mcpx.servers.a": {"command": "a"}, "editor.fontSize": 12, "mcp": {"servers": {"notes": ` + wrappedNotes + `}}}`,
			[]want{{"mcp.servers", "", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(h, path, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Servers()
			if len(got) != len(tc.want) {
				t.Fatalf("servers %+v, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				s := got[i]
				if s.Where != w.where || (s.Wrapped != nil) != w.wrapped ||
					(w.problem == "") != (s.Problem == "") || !strings.Contains(s.Problem, w.problem) {
					t.Errorf("server %d: %+v, want %+v", i, s, w)
				}
			}
			out, changes, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
			if err != nil {
				t.Fatal(err)
			}
			for i, ch := range changes {
				if tc.want[i].problem != "" && (ch.Action != ActSkipped && ch.Action != ActNotEnforced || !strings.HasSuffix(ch.Reason, got[i].Problem)) {
					t.Errorf("wrap of server %d: %s (%s), want skipped", i, ch.Action, ch.Reason)
				}
			}
			if slices.ContainsFunc(tc.want, func(w want) bool { return w.problem != "" }) && !bytes.Equal(out, []byte(tc.data)) {
				t.Errorf("wrap edited a server VS Code reads from a dotted setting:\n%s", out)
			}
		})
	}
}

// TestJSONShadowedEntries: of two members of one name (a server, or a map
// that holds servers) a host reads the last, and VS Code's settings reader
// lets a later "mcp" replace an earlier "mcp.servers" and the other way
// round. A shadowed entry is not what runs: it is not wrapped, and not
// reported wrapped, whatever it holds; the entry that runs is.
func TestJSONShadowedEntries(t *testing.T) {
	wrapped := func(name string) string {
		return `{"command": "` + self + `", "args": ["proxy", "--policy", "` + policy + `", "--name", "` + name + `", "--", "node"]}`
	}
	const bad = `{"command": "evil", "args": [1]}` // cannot be wrapped
	type want struct {
		where   string
		wrapped bool
		problem string
	}
	for _, tc := range []struct {
		name, host, path, data string
		want                   []want
	}{
		{"a later server of the same name", "claude-desktop", "/h/claude_desktop_config.json",
			`{"mcpServers": {"a": ` + wrapped("a") + `, "a": ` + bad + `}}`,
			[]want{{"mcpServers", false, `a later member "a" replaces this one`}, {"mcpServers", false, `"args" has a member that is not a string`}}},
		{"a later map of the same name", "claude-desktop", "/h/claude_desktop_config.json",
			`{"mcpServers": {"a": ` + wrapped("a") + `}, "mcpServers": {"a": ` + bad + `}}`,
			[]want{{"mcpServers", false, `a later member "mcpServers" replaces this one`}, {"mcpServers", false, `"args" has a member that is not a string`}}},
		{"a later mcp over mcp.servers", "vscode", "/p/.vscode/settings.json",
			`{"mcp.servers": {"a": ` + wrapped("a") + `}, "mcp": {"servers": {"a": ` + bad + `}}}`,
			[]want{{"mcp.servers", false, "not a string"}, {`["mcp.servers"]`, false, `a later member "mcp" replaces this one`}}},
		{"a later mcp.servers over mcp", "vscode", "/p/.vscode/settings.json",
			`{"mcp": {"servers": {"a": ` + wrapped("a") + `}}, "mcp.servers": {"a": ` + bad + `}}`,
			[]want{{"mcp.servers", false, `a later member "mcp.servers" replaces this one`}, {`["mcp.servers"]`, false, "not a string"}}},
		{"a later mcp without servers", "vscode", "/p/.vscode/settings.json",
			`{"mcp.servers": {"a": ` + wrapped("a") + `}, "mcp": {"inputs": []}}`,
			[]want{{`["mcp.servers"]`, false, `a later member "mcp" replaces this one`}}},
		{"a repeated mcp keeps its first place", "vscode", "/p/.vscode/settings.json",
			`{"mcp": {"servers": {"a": ` + wrapped("a") + `}}, "mcp.servers": {"b": ` + wrapped("b") + `}, "mcp": {"inputs": []}}`,
			[]want{{"mcp.servers", false, `a later member "mcp" replaces this one`}, {`["mcp.servers"]`, true, ""}}},
		{"distinct names are all read", "vscode", "/p/.vscode/settings.json",
			`{"mcp": {"servers": {"a": ` + wrapped("a") + `}, "mcpServers": {"b": ` + wrapped("b") + `}}}`,
			[]want{{"mcp.servers", true, ""}, {"mcp.mcpServers", true, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mustHost(t, tc.host), tc.path, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Servers()
			if len(got) != len(tc.want) {
				t.Fatalf("servers %+v, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				s := got[i]
				if s.Where != w.where || (s.Wrapped != nil) != w.wrapped || (w.problem == "") != (s.Problem == "") || !strings.Contains(s.Problem, w.problem) {
					t.Errorf("server %d: %+v, want %+v", i, s, w)
				}
			}
			if out, _, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}); err != nil || (tc.want[0].problem != "" && string(out) != tc.data) {
				t.Errorf("wrap edited a shadowed entry (%v):\n%s", err, out)
			}
		})
	}
}
