package hosts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostGolden are the golden files of testdata/golden/hosts, one per host
// format: NAME.EXT wraps to NAME.wrapped.EXT; each has a plain stdio
// entry, one that only looks wrapped (a lookalike mcpsign, another policy
// or name, a weakening flag), remote entries, and one that cannot be
// wrapped. want is what wrap does to each entry.
var hostGolden = []struct {
	file string
	want map[string]Action
}{
	{"claude-desktop.json", map[string]Action{"notes": ActWrapped, "lookalike": ActRewrapped, "other-policy": ActRewrapped, "remote": ActWrapped}},
	{"claude-code.json", map[string]Action{"db": ActWrapped, "tofu": ActRewrapped, "remote": ActWrapped, "sse": ActNotEnforced}},
	{"vscode.json", map[string]Action{"notes": ActWrapped, "lookalike": ActRewrapped, "audit-mode": ActRewrapped, "gh": ActWrapped, "prompted": ActNotEnforced}},
	{"cursor.json", map[string]Action{"fs": ActWrapped, "lookalike": ActRewrapped, "remote": ActWrapped}},
	{"windsurf.json", map[string]Action{"git": ActWrapped, "w": ActWrapped, "lookalike": ActRewrapped}},
	{"zed.json", map[string]Action{"flat": ActWrapped, "nested": ActRewrapped, "remote": ActWrapped, "ext": ActNotEnforced}},
	{"gemini.json", map[string]Action{"py": ActWrapped, "other-name": ActRewrapped, "h": ActWrapped, "s": ActNotEnforced}},
	{"codex.toml", map[string]Action{"docs": ActWrapped, "lookalike": ActRewrapped, "figma": ActWrapped}},
}

// TestHostGolden: wrap writes the golden file; what it reports is what the
// host reads (every entry it wrapped runs this mcpsign under the policy);
// wrap twice is wrap once; unwrap after wrap is unwrap alone.
func TestHostGolden(t *testing.T) {
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	for _, tc := range hostGolden {
		t.Run(tc.file, func(t *testing.T) {
			ext := filepath.Ext(tc.file)
			name := strings.TrimSuffix(tc.file, ext)
			h := mustHost(t, name)
			orig := readGolden(t, filepath.Join("hosts", tc.file))
			c, err := Parse(h, tc.file, orig)
			if err != nil {
				t.Fatal(err)
			}
			out, changes, err := c.Wrap(opts)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("hosts", name+".wrapped"+ext)
			if *updateGolden {
				writeGolden(t, golden, out)
			} else if want := readGolden(t, golden); !bytes.Equal(out, want) {
				t.Errorf("wrap is not %s:\n%s", golden, out)
			}
			if len(changes) != len(tc.want) {
				t.Errorf("%d changes, want %d", len(changes), len(tc.want))
			}
			for _, ch := range changes {
				if ch.Action != tc.want[ch.Server.Name] {
					t.Errorf("%s: %s (%s), want %s", ch.Server.Name, ch.Action, ch.Reason, tc.want[ch.Server.Name])
				}
			}
			wc, err := Parse(h, tc.file, out)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range wc.Servers() {
				enforced := opts.Want().Check(s) == ""
				if a := tc.want[s.Name]; enforced != (a == ActWrapped || a == ActRewrapped) {
					t.Errorf("%s (%s): enforced %v after wrap: %s", s.Name, a, enforced, opts.Want().Check(s))
				}
			}
			again, changes, _ := wc.Wrap(opts)
			if !bytes.Equal(again, out) {
				t.Errorf("wrap twice:\n%s", again)
			}
			for _, ch := range changes {
				if a := tc.want[ch.Server.Name]; (a == ActWrapped || a == ActRewrapped) != (ch.Action == ActAlreadyWrapped) {
					t.Errorf("wrap twice: %s: %s", ch.Server.Name, ch.Action)
				}
			}
			back, _, _ := wc.Unwrap(nil)
			alone, _, _ := c.Unwrap(nil)
			if !bytes.Equal(back, alone) {
				t.Errorf("unwrap after wrap:\n%s\nunwrap alone:\n%s", back, alone)
			}
		})
	}
}

// TestHostGoldenFiles: every file of testdata/golden/hosts is in hostGolden.
func TestHostGoldenFiles(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "golden", "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".wrapped.") {
			continue
		}
		found := false
		for _, tc := range hostGolden {
			found = found || tc.file == e.Name()
		}
		if !found {
			t.Errorf("%s is not tested", e.Name())
		}
	}
}
