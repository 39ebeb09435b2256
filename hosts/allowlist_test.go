package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
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
			want := want
			if name == "vscode" {
				want.Fronts = []string{"https://mcp-front.example.com/mcp"}
			}
			al, err := BuildAllowlist(context.Background(), []File{{Host: mustHost(t, name), Path: path}}, nil, want)
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
	al, err := BuildAllowlist(context.Background(), files, nil, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(al.AllowedMcpServers) != 0 || len(al.Skipped) == 0 {
		t.Errorf("an unwrapped file allowlisted %+v", al.AllowedMcpServers)
	}
	for _, u := range []string{"https://user:pw@front.example.com/mcp", "ftp://front.example.com", "https://${HOST}/mcp", "http://front.example.com/mcp", "https://front.example.com/mcp?token=x"} {
		w := want
		w.Fronts = []string{u}
		var fe *FrontError
		if _, err := BuildAllowlist(context.Background(), nil, nil, w); !errors.As(err, &fe) || strings.Contains(err.Error(), "pw") {
			t.Errorf("front %s: %v", u, err)
		}
	}
}

// TestAllowlistFront: a remote entry wrap --front pointed at a front gets
// its URL as serverUrl when the front is trusted (--front), nothing when
// it is not.
func TestAllowlistFront(t *testing.T) {
	t.Parallel()
	const front = "https://notes-mcp.example.internal/mcp"
	h := mustHost(t, "claude-code")
	c, err := Parse(h, "x.json", []byte(`{"mcpServers": {"notes": {"type": "http", "url": "https://notes.example.com/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := c.Wrap(WrapOptions{Front: front, Servers: []string{"notes"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	files := []File{{Host: h, Path: path}}
	want := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}.Want()
	al, err := BuildAllowlist(context.Background(), files, nil, want)
	if err != nil || len(al.AllowedMcpServers) != 0 || len(al.Skipped) != 1 {
		t.Fatalf("an untrusted front: %+v %v", al, err)
	}
	want.Fronts = []string{front}
	al, err = BuildAllowlist(context.Background(), files, nil, want)
	if err != nil || len(al.AllowedMcpServers) != 1 || al.AllowedMcpServers[0].ServerURL != front || al.AllowedMcpServers[0].ServerCommand != nil {
		t.Fatalf("a trusted front: %+v %v", al, err)
	}
}

// TestAllowlistArgvNotPinned: an allowlist entry matches any host entry
// with the same argv, whatever its env and wherever it is (a cloned
// repository's .mcp.json too). An enforced entry whose mcpsign is a bare
// name (looked up on a PATH the entry's env may set) or whose policy file
// is written with a host variable (${workspaceFolder}: a repository's own
// policy) would allow a program or a policy the administrator never saw:
// it gets no entry, and says why.
func TestAllowlistArgvNotPinned(t *testing.T) {
	t.Parallel()
	const tail = `"--name", "notes", "--", "npx", "-y", "@acme/notes@1.2.0"]`
	for _, tc := range []struct {
		name    string
		command string
		policy  string // the proxy's --policy
		want    string // Want.Policy
		allowed bool
		reason  string
	}{
		{"absolute program and policy", self, policy, policy, true, ""},
		{"absolute program and policy, any policy", self, policy, "", true, ""},
		{"bare program name", "mcpsign", policy, policy, false, "not an absolute path"},
		{"workspace policy, any policy", self, "${workspaceFolder}/.mcpsign/policy.json", "", false, "host variable"},
		{"workspace policy named by --policy", self, "${workspaceFolder}/.mcpsign/policy.json", "${workspaceFolder}/.mcpsign/policy.json", false, "host variable"},
		{"env policy", self, "${MCPSIGN_POLICY}", "", false, "host variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := `{"mcpServers": {"notes": {"type": "stdio", "command": "` + tc.command + `", "args": ["proxy", "--policy", "` + tc.policy + `", ` + tail + `}}}`
			path := filepath.Join(t.TempDir(), ".mcp.json")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			want := Want{Self: self, Policy: tc.want, IsSelf: func(p string) error {
				if p == self || p == "mcpsign" { // as SameExecutable finds a bare name on PATH
					return nil
				}
				return ErrNotSelf
			}}
			if why := want.Check(mustServer(t, path, "notes")); why != "" {
				t.Fatalf("the row's entry is not enforced, so it tests nothing: %s", why)
			}
			al, err := BuildAllowlist(context.Background(), []File{{Host: mustHost(t, "claude-code"), Path: path}}, nil, want)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(al.AllowedMcpServers) == 1; got != tc.allowed {
				t.Fatalf("allowed %v, want %v: %+v", got, tc.allowed, al.AllowedMcpServers)
			}
			if !tc.allowed && (len(al.Skipped) != 1 || !strings.Contains(al.Skipped[0].Reason, tc.reason)) {
				t.Errorf("skipped %+v, want one saying %q", al.Skipped, tc.reason)
			}
		})
	}
}

func mustServer(t *testing.T, path, name string) Server {
	t.Helper()
	c, err := Load(context.Background(), mustHost(t, "claude-code"), path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %s in %s", name, path)
	return Server{}
}
