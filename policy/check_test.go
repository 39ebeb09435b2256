package policy_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/policy"
)

// TestCheck: a policy that resolves, one that blocks a server, one that
// names a file that is not there, and no policy at all.
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = `{"kind":"mcpsign.policy","policyVersion":1,"servers":{`
	for _, tc := range []struct {
		name, path string
		blocked    int
		err        error
		text       string
	}{
		{"resolves", write("ok.json", head+`"local":{"identities":[],"unsigned":"tofu"}}}`), 0, nil, "1 server(s)"},
		{"blocks", write("blocked.json", head+`"a":{"identities":[]},"local":{"identities":[],"unsigned":"tofu"}}}`), 1, nil, "BLOCKED"},
		{"missing key file", write("key.json", head+`"a":{"identities":[{"method":"key","key":"none.pem"}]}}}`), 0, fs.ErrNotExist, ""},
		{"no policy", filepath.Join(dir, "none.json"), 0, fs.ErrNotExist, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			err := policy.Check(tc.path, &b)
			var be *policy.BlockedError
			switch {
			case tc.blocked > 0:
				if !errors.As(err, &be) || be.Servers != tc.blocked || err.Error() != "1 server(s) blocked by the policy" {
					t.Fatalf("err %v, want %d blocked", err, tc.blocked)
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.text) {
				t.Errorf("text %q does not say %q", b.String(), tc.text)
			}
		})
	}
}

// TestWriteInit: the template is written once, replaced only when asked,
// and checks as a policy whose one server is blocked.
func TestWriteInit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := policy.WriteInit(path, false); err != nil {
		t.Fatal(err)
	}
	if err := policy.WriteInit(path, false); !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("second write: %v", err)
	}
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := policy.WriteInit(path, true); err != nil {
		t.Fatal(err)
	}
	var be *policy.BlockedError
	if err := policy.Check(path, &strings.Builder{}); !errors.As(err, &be) || be.Servers != 1 {
		t.Fatalf("the template checks as %v", err)
	}
}
