package hosts

import (
	"bytes"
	"os"
	"path/filepath"
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

			wrapped, _, err := c.Wrap(WrapOptions{Self: self, Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(wrapped, want) {
				t.Errorf("wrap is not the golden file:\n%s", wrapped)
			}
			wc, err := Parse(h, tc.path, wrapped)
			if err != nil {
				t.Fatal(err)
			}
			if again, _, err := wc.Wrap(WrapOptions{Self: self, Policy: policy}); err != nil || !bytes.Equal(again, wrapped) {
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
