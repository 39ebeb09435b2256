package proxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
)

// TestCommandVerifier checks the protocol of a verifier command with small
// shell scripts: what reaches the command's stdin, and how each answer is
// taken. 'mcpsign proxy-verify' itself is tested through the mcpsign and
// mcpsign-proxy executables in cmd/mcpsign.
func TestCommandVerifier(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the verifier scripts are POSIX shell")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	snap, err := digest.ParseSnapshot([]byte(`{"tools":[{"name":"greet","description":"Say hello.","inputSchema":{"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got := filepath.Join(dir, "stdin")
	const approval = `{"method":"key","identity":"sha256:00","issuer":"","bundleDigest":"sha256:11","approvedAt":"0001-01-01T00:00:00Z"}`
	tests := []struct {
		name    string
		script  string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr string // "" approves
	}{
		{"approves", `cat > "$1"; echo '` + approval + `'`, nil, ""},
		{"refuses with its reason", `cat >/dev/null; echo 'mcpsign: verification failed at step identity: signed by intern@example.com' >&2; exit 1`, nil,
			"verification failed at step identity: signed by intern@example.com"},
		{"exits 0 with no answer", `cat >/dev/null`, nil, "not an approval"},
		{"answers garbage", `cat >/dev/null; echo '{"method":"key",'`, nil, "not an approval"},
		{"answers an unknown member", `cat >/dev/null; echo '{"method":"key","approvedBy":"me"}'`, nil, "not an approval"},
		{"answers two values", `cat >/dev/null; echo '` + approval + approval + `'`, nil, "more than one JSON value"},
		{"answers tofu", `cat >/dev/null; echo '{"method":"tofu"}'`, nil, "not a signed approval"},
		{"answers too much", `cat >/dev/null; head -c 200000 /dev/zero`, nil, "larger than"},
		{"fails silently", `cat >/dev/null; exit 3`, nil, "said nothing"},
		{"hangs", `cat >/dev/null; sleep 30`, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, "verifying: context deadline exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(got)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			start := time.Now()
			a, err := CommandVerifier([]string{sh, "-c", tc.script, "verifier", got})(ctx, snap)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if time.Since(start) > 10*time.Second {
					t.Errorf("took %v: the verifier was not stopped", time.Since(start))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Method != pin.MethodKey || a.Identity != "sha256:00" || a.BundleDigest != "sha256:11" {
				t.Errorf("approval %+v", a)
			}
			in, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			back, err := digest.ParseSnapshot(in)
			if err != nil {
				t.Fatalf("the verifier's stdin is not a snapshot file: %v\n%s", err, in)
			}
			if d := digest.Compute(back); len(d.Definitions) != 1 || d.Definitions[0].Digest != digest.Compute(snap).Definitions[0].Digest {
				t.Errorf("the verifier got other definitions: %+v", d.Definitions)
			}
		})
	}
	t.Run("no such command", func(t *testing.T) {
		_, err := CommandVerifier([]string{filepath.Join(dir, "missing")})(context.Background(), snap)
		if err == nil || !strings.Contains(err.Error(), "starting the verifier") {
			t.Fatalf("err %v", err)
		}
	})
}
