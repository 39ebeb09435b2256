package proxy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin"
)

// TestCommandVerifier checks the protocol of a verifier command with small
// shell scripts: what reaches the command's stdin, and how each answer is
// taken. 'mcpsign proxy-verify' itself is tested through the mcpsign and
// mcpsign-proxy executables in cmd/mcpsign.
func TestCommandVerifier(t *testing.T) {
	t.Parallel()
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
	const bare = `{"method":"key","identity":"sha256:00","issuer":"","bundleDigest":"sha256:11","approvedAt":"0001-01-01T00:00:00Z"}`
	const approval = `{"approval":` + bare + `,"server":{"name":"notes","version":"2.0.0"}}`
	const timed = `{"approval":` + bare + `,"server":{"name":"notes","version":"2.0.0"},"signedAt":"2026-05-01T12:00:00Z"}`
	signedAt := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		script   string
		ctx      func() (context.Context, context.CancelFunc)
		wantErr  string    // "" approves
		signedAt time.Time // of an approval
	}{
		{"approves", `cat > "$1"; echo '` + approval + `'`, nil, "", time.Time{}},
		{"approves with a signing time", `cat > "$1"; echo '` + timed + `'`, nil, "", signedAt},
		{"answers a bare approval (the answer of another release)", `cat >/dev/null; echo '` + bare + `'`, nil, `unknown field "method"`, time.Time{}},
		{"answers no server", `cat >/dev/null; echo '{"approval":` + bare + `}'`, nil, "no signed server name", time.Time{}},
		{"answers an empty server name", `cat >/dev/null; echo '{"approval":` + bare + `,"server":{"name":"","version":"1"}}'`, nil, "no signed server name", time.Time{}},
		{"answers no approval", `cat >/dev/null; echo '{"server":{"name":"notes","version":"1"}}'`, nil, "no approval", time.Time{}},
		{"answers an unknown member in the approval", `cat >/dev/null; echo '{"approval":{"method":"key","approvedBy":"me"},"server":{"name":"notes","version":"1"}}'`, nil, "not an approval", time.Time{}},
		{"answers a repeated member", `cat >/dev/null; echo '{"approval":` + bare + `,"server":{"name":"twofaced","version":"1"},"server":{"name":"notes","version":"2.0.0"}}'`, nil, `repeated member "server"`, time.Time{}},
		{"answers a member in another case", `cat >/dev/null; echo '{"approval":` + bare + `,"Server":{"name":"notes","version":"2.0.0"}}'`, nil, `unknown member "Server"`, time.Time{}},
		{"answers a repeated approval member", `cat >/dev/null; echo '{"approval":{"method":"key","method":"key","identity":"sha256:00","issuer":"","bundleDigest":"sha256:11","approvedAt":"0001-01-01T00:00:00Z"},"server":{"name":"notes","version":"2"}}'`, nil, `"method" is repeated`, time.Time{}},
		{"answers a zero signing time", `cat >/dev/null; echo '{"approval":` + bare + `,"server":{"name":"notes","version":"1"},"signedAt":"0001-01-01T00:00:00Z"}'`, nil, "zero signedAt", time.Time{}},
		{"answers a signing time that is not one", `cat >/dev/null; echo '{"approval":` + bare + `,"server":{"name":"notes","version":"1"},"signedAt":"yesterday"}'`, nil, "not an approval", time.Time{}},
		{"refuses with its reason", `cat >/dev/null; echo 'mcpsign: verification failed at step identity: signed by intern@example.com' >&2; exit 1`, nil,
			"verification failed at step identity: signed by intern@example.com", time.Time{}},
		{"exits 0 with no answer", `cat >/dev/null`, nil, "not an approval", time.Time{}},
		{"answers garbage", `cat >/dev/null; echo '{"approval":{"method":"key",'`, nil, "not an approval", time.Time{}},
		{"answers an unknown member", `cat >/dev/null; echo '{"approval":` + bare + `,"server":{"name":"notes","version":"1"},"approvedBy":"me"}'`, nil, "not an approval", time.Time{}},
		{"answers two values", `cat >/dev/null; echo '` + approval + approval + `'`, nil, "more than one JSON value", time.Time{}},
		{"answers tofu", `cat >/dev/null; echo '{"approval":{"method":"tofu","identity":"","issuer":"","bundleDigest":"","approvedAt":"2026-05-01T12:00:00Z"},"server":{"name":"notes","version":"1"}}'`, nil, "not a signed approval", time.Time{}},
		{"answers an incomplete approval", `cat >/dev/null; echo '{"approval":{"method":"key"},"server":{"name":"notes","version":"1"}}'`, nil, `member "identity" is missing`, time.Time{}},
		{"answers too much", `cat >/dev/null; head -c 200000 /dev/zero`, nil, "larger than", time.Time{}},
		{"fails silently", `cat >/dev/null; exit 3`, nil, "said nothing", time.Time{}},
		{"hangs", `cat >/dev/null; sleep 30`, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, "verifying: context deadline exceeded", time.Time{}},
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
			a, err := CommandVerifier([]string{sh, "-c", tc.script, "verifier", got}, "")(ctx, snap)
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
			if a.Approval.Method != evidence.MethodKey || a.Approval.Identity != "sha256:00" || a.Approval.BundleDigest != "sha256:11" ||
				a.Server != (digest.ServerInfo{Name: "notes", Version: "2.0.0"}) || !a.SignedAt.Equal(tc.signedAt) {
				t.Errorf("answer %+v", a)
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
		_, err := CommandVerifier([]string{filepath.Join(dir, "missing")}, "")(context.Background(), snap)
		if err == nil || !strings.Contains(err.Error(), "starting the verifier") {
			t.Fatalf("err %v", err)
		}
	})
}

// FuzzParseVerified: a verifier's answer is either refused or a signed
// approval of a named server, and what is accepted reads back the same.
func FuzzParseVerified(f *testing.F) {
	for _, seed := range []string{
		`{"approval":{"method":"key","identity":"sha256:00","issuer":"","bundleDigest":"sha256:11","approvedAt":"0001-01-01T00:00:00Z"},"server":{"name":"notes","version":"2.0.0"}}`,
		`{"approval":{"method":"sigstore","identity":"a@example.com","issuer":"https://i","bundleDigest":"sha256:11","tlog":{"logIndex":1,"logId":"0a","integratedTime":5},"approvedAt":"2026-05-01T12:00:00Z"},"server":{"name":"n","version":""},"signedAt":"2026-05-01T12:00:00+02:00"}`,
		`{"approval":{"method":"tofu"},"server":{"name":"n","version":"1"}}`,
		`{"approval":{"method":"key"},"server":{"name":""}}`,
		`{"approval":{"method":"key"},"server":{"name":"n"},"signedAt":"0001-01-01T00:00:00Z"}`,
		`{"method":"key","identity":"sha256:00"}`,
		`{"approval":{"method":"key"},"server":{"name":"n"}} {}`,
		`{"approval":null,"server":null}`,
		`{"APPROVAL":{"method":"key"},"Server":{"name":"n"}}`,
		``, `[]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseVerified(data)
		if err != nil {
			return
		}
		if v.Approval.Method == "" || v.Approval.Method == pin.MethodTOFU || v.Server.Name == "" {
			t.Fatalf("accepted %+v from %q", v, data)
		}
		if !v.SignedAt.IsZero() && v.SignedAt.Location() != time.UTC {
			t.Fatalf("signedAt %v is not UTC", v.SignedAt)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseVerified(again)
		if err != nil || back.Server != v.Server || !back.SignedAt.Equal(v.SignedAt) || back.Approval.Method != v.Approval.Method ||
			back.Approval.Identity != v.Approval.Identity || back.Approval.BundleDigest != v.Approval.BundleDigest {
			t.Fatalf("%q reads back as %+v (%v), was %+v", again, back, err, v)
		}
	})
}

// TestCommandVerifierAdvertised: the server's advertised capabilities reach
// the command as a file named by the last argument, removed afterwards;
// without them no argument is added.
func TestCommandVerifierAdvertised(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the verifier script is POSIX shell")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	const advertisedArg = "--handed-over"
	const approval = `{"approval":{"method":"key","identity":"sha256:00","issuer":"","bundleDigest":"sha256:11","approvedAt":"0001-01-01T00:00:00Z"},"server":{"name":"notes","version":"2.0.0"}}`
	// Records its last argument and the file it names, if any.
	script := `cat >/dev/null; last=""; for a in "$@"; do last="$a"; done; printf '%s\n' "$last" > "$1"; ` +
		`case "$last" in ` + advertisedArg + `=*) cat "${last#*=}" >> "$1";; esac; echo '` + approval + `'`
	const adv = `{"dev.mcpsign/attestation":{"bundle":{"k":1}}}`
	for _, tt := range []struct {
		name       string
		advertised []byte
		arg        string
		want       string // the recorded last argument's prefix, and the file
	}{
		{"advertised", []byte(adv), advertisedArg, advertisedArg + "="},
		{"none", nil, advertisedArg, "x"},
		{"advertised, no argument to hand it over", []byte(adv), "", "x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := digest.ParseSnapshot([]byte(`{"tools":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			snap.Advertised = tt.advertised
			if _, err := CommandVerifier([]string{sh, "-c", script, "sh", rec, "x"}, tt.arg)(context.Background(), snap); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			first, rest, _ := strings.Cut(string(data), "\n")
			if !strings.HasPrefix(first, tt.want) {
				t.Fatalf("last argument %q, want %q", first, tt.want)
			}
			if tt.advertised == nil || tt.arg == "" {
				if rest != "" {
					t.Errorf("a file was handed over: %q", rest)
				}
				return
			}
			if rest != adv {
				t.Errorf("the file held %q, want %q", rest, adv)
			}
			if _, err := os.Stat(strings.TrimPrefix(first, advertisedArg+"=")); err == nil {
				t.Error("the file was not removed")
			}
		})
	}
}

// TestExactMembers: a verifier's answer has only the members mcpsign
// reads, spelled exactly, at the top and in its approval, server and tlog
// objects (a null one is not read further).
func TestExactMembers(t *testing.T) {
	for _, tc := range []struct {
		answer string
		ok     bool
	}{
		{`{"approval":{"method":"key","tlog":{"logIndex":1}},"server":{"name":"a"},"signedAt":null}`, true},
		{`{"approval":null,"server":null}`, true},
		{`{"approval":{},"extra":1}`, false},
		{`{"approval":{"method":"key","extra":1}}`, false},
		{`{"server":{"name":"a","Name":"b"}}`, false},
		{`{"approval":{"tlog":{"logIndex":1,"extra":1}}}`, false},
		{`{"approval":{"method":"key","method":"key"}}`, false},
	} {
		if err := exactMembers([]byte(tc.answer), verifiedMembers.Get()); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want accepted %v", tc.answer, err, tc.ok)
		}
	}
}

// TestCappedBuffer: what a verifier prints is kept up to the cap exactly,
// and only a byte past it is noted.
func TestCappedBuffer(t *testing.T) {
	b := &cappedBuffer{max: 4}
	for _, tc := range []struct {
		write, kept string
		over        bool
	}{{"ab", "ab", false}, {"cd", "abcd", false}, {"e", "abcd", true}} {
		if n, err := b.Write([]byte(tc.write)); n != len(tc.write) || err != nil {
			t.Fatalf("Write(%q): %d, %v", tc.write, n, err)
		}
		if b.String() != tc.kept || b.over != tc.over {
			t.Errorf("after %q: %q kept, over %v; want %q, %v", tc.write, b.String(), b.over, tc.kept, tc.over)
		}
	}
	b = &cappedBuffer{max: 3}
	b.Write([]byte("abcd"))
	if b.String() != "abc" || !b.over {
		t.Errorf("one write past the cap: %q kept, over %v", b.String(), b.over)
	}
}
