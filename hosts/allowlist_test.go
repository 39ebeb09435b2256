package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAllowlistGolden: the allowlist of each host's wrapped golden file
// is testdata/golden/allowlist/NAME.txt (the JSON, then the notes): every
// enforced entry's argv verbatim, and the entries left out with why.
func TestAllowlistGolden(t *testing.T) {
	t.Parallel()
	want := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}.Want()
	for _, tc := range hostGolden {
		t.Run(tc.file, func(t *testing.T) {
			ext := filepath.Ext(tc.file)
			name := strings.TrimSuffix(tc.file, ext)
			path := filepath.Join("testdata", "golden", "hosts", name+".wrapped"+ext)
			var fronts []string
			if name == "vscode" {
				fronts = []string{"https://mcp-front.example.com/mcp"}
			}
			al, err := BuildAllowlist(context.Background(), []File{{Host: mustHost(t, name), Path: path}}, nil, want, fronts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetIndent("", "  ")
			enc.Encode(al)
			al.WriteNotes(&out)
			golden := filepath.Join("allowlist", name+".txt")
			if *updateGolden {
				writeGolden(t, golden, out.Bytes())
			} else if g := readGolden(t, golden); !bytes.Equal(out.Bytes(), g) {
				t.Errorf("not %s:\n%s", golden, out.Bytes())
			}
			// What it allows is what wrap wrote for an enforced entry, and
			// nothing that is not enforced.
			c, err := Load(context.Background(), mustHost(t, name), path)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range c.Servers() {
				listed := slices.ContainsFunc(al.AllowedMcpServers, func(e AllowEntry) bool { return e.ServerCommand != nil && slices.Equal(e.ServerCommand, s.Argv) })
				if listed && want.Check(s) != "" {
					t.Errorf("%s is not enforced and is allowlisted", s.Name)
				}
			}
		})
	}
}

// TestAllowlistRefuses: an unwrapped or weakened entry gets no entry; a
// front URL with user info is refused.
func TestAllowlistRefuses(t *testing.T) {
	t.Parallel()
	want := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}.Want()
	files := []File{{Host: mustHost(t, "claude-code"), Path: filepath.Join("testdata", "golden", "hosts", "claude-code.json")}}
	al, err := BuildAllowlist(context.Background(), files, nil, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(al.AllowedMcpServers) != 0 || len(al.Skipped) == 0 {
		t.Errorf("an unwrapped file allowlisted %+v", al.AllowedMcpServers)
	}
	for _, u := range []string{"https://user:pw@front.example.com/mcp", "ftp://front.example.com", "https://${HOST}/mcp"} {
		if _, err := BuildAllowlist(context.Background(), nil, nil, want, []string{u}); err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("front %s: %v", u, err)
		}
	}
}
