package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/capability"
	"github.com/mcpsign/mcpsign/verify"
)

// pinReport is the part of verify-pin's JSON the tests read.
type pinReport struct {
	Lock     string `json:"lock"`
	Failed   bool   `json:"failed"`
	FailOn   string `json:"failOn"`
	Errors   int    `json:"errors"`
	Findings []struct {
		Rule, Severity, Kind, Key, Message string
		Capabilities                       []string
	} `json:"findings"`
}

func rules(r pinReport) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Rule+" "+f.Key)
	}
	return out
}

func TestPinTOFUAndVerifyPin(t *testing.T) {
	t.Parallel()
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "notes.mcpsign.lock")

	// Neither a bundle nor --tofu: refused before the server starts.
	if code, _, stderr := runCLI(t, "pin", "--lock", lock, "--", server); code != 2 || !strings.Contains(stderr, "--tofu") {
		t.Fatalf("pin without --bundle or --tofu: exit %d %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "pin", "--lock", lock, "--tofu", "--", server)
	if code != 0 {
		t.Fatalf("pin --tofu: exit %d %s", code, stderr)
	}
	if !strings.Contains(stderr, "WARNING: --tofu") || !strings.Contains(stdout, "tofu (trusted on first use") ||
		!strings.Contains(stdout, "! delete_note") || !strings.Contains(stdout, "5 tools, 2 prompts, 1 resource template,") {
		t.Errorf("pin output:\n%s\n%s", stdout, stderr)
	}
	l, err := pin.Read(lock)
	if err != nil || l.Approval.Method != pin.MethodTOFU {
		t.Fatalf("lock: %v", err)
	}
	// An existing lock is kept without --force.
	if code, _, stderr := runCLI(t, "pin", "--lock", lock, "--tofu", "--", server, "--mode", "rugpull"); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("pin over an existing lock: exit %d %s", code, stderr)
	}
	if l2, _ := pin.Read(lock); l2 == nil || l2.LockDigest != l.LockDigest {
		t.Error("the existing lock was replaced")
	}

	t.Run("honest: no drift", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "verify-pin", "--lock", lock, "--", server)
		if code != 0 || !strings.Contains(stdout, "OK: the server matches the lock") {
			t.Errorf("exit %d\n%s%s", code, stdout, stderr)
		}
	})
	t.Run("rug pull: drift", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "verify-pin", "--lock", lock, "--", server, "--mode", "rugpull")
		if code != 1 {
			t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
		}
		for _, want := range []string{"pin-tool-changed", "pin-tool-added", "pin-capability-added", `\u{200B}<IMPORTANT>\u{202E}`, `+    "sidenote": {`} {
			if !strings.Contains(stdout, want) {
				t.Errorf("report lacks %q:\n%s", want, stdout)
			}
		}
		if strings.ContainsAny(stdout, "\u200b\u202e") {
			t.Error("raw hidden characters in the report")
		}
	})
	t.Run("fail-on", func(t *testing.T) {
		for failOn, want := range map[string]int{"drift": 1, "capability": 1, "never": 0, "any": 1, "none": 0} {
			code, stdout, stderr := runCLI(t, "verify-pin", "--lock", lock, "--fail-on", failOn, "--format", "json", "--", server, "--mode", "rugpull")
			if code != want {
				t.Errorf("--fail-on %s: exit %d, want %d %s", failOn, code, want, stderr)
			}
			var r pinReport
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(rules(r), ", ")
			if got != "pin-tool-added run_command, pin-capability-added run_command, pin-tool-changed search_notes, pin-hidden-characters search_notes" || r.Failed != (want == 1) || r.FailOn != strings.NewReplacer("any", "drift", "none", "never").Replace(failOn) {
				t.Errorf("--fail-on %s: %+v", failOn, r)
			}
		}
		if code, _, stderr := runCLI(t, "verify-pin", "--lock", lock, "--fail-on", "sometimes", "--", server); code != 2 || !strings.Contains(stderr, "want drift (or any), capability or never (or none)") {
			t.Errorf("bad --fail-on: exit %d %s", code, stderr)
		}
	})
	t.Run("GitHub job summary", func(t *testing.T) {
		summary := filepath.Join(t.TempDir(), "summary.md")
		os.WriteFile(summary, []byte("# earlier step\n"), 0o644)
		env := map[string]string{"GITHUB_STEP_SUMMARY": summary}
		if code, _, stderr := runWith(t, env, "verify-pin", "--lock", lock, "--", server, "--mode", "rugpull"); code != 1 {
			t.Fatalf("exit %d %s", code, stderr)
		}
		md, _ := os.ReadFile(summary)
		for _, want := range []string{"# earlier step\n", "### mcpsign verify-pin: ❌ drift: 4 errors", "| error | `pin-hidden-characters` |", "| error | `pin-capability-added` |", "```diff", `\u{200B}<IMPORTANT>`} {
			if !strings.Contains(string(md), want) {
				t.Errorf("summary lacks %q:\n%s", want, md)
			}
		}
	})
	t.Run("hand-edited lock", func(t *testing.T) {
		data, _ := os.ReadFile(lock)
		edited := filepath.Join(t.TempDir(), "edited.lock")
		os.WriteFile(edited, bytes.Replace(data, []byte("Delete a note"), []byte("Delete a nose"), 1), 0o644)
		before, _ := os.ReadFile(edited)
		// The server command does not exist: the lock is refused first.
		code, stdout, stderr := runCLI(t, "verify-pin", "--lock", edited, "--", filepath.Join(dir, "no-such-server"))
		if code != 2 || !strings.Contains(stderr, edited) || !strings.Contains(stderr, "modified after it was written") || stdout != "" {
			t.Errorf("exit %d\n%s%s", code, stdout, stderr)
		}
		code, stdout, _ = runCLI(t, "verify-pin", "--lock", edited, "--format", "json", "--", server)
		var r pinReport
		json.Unmarshal([]byte(stdout), &r)
		if code != 2 || len(r.Findings) != 1 || r.Findings[0].Rule != pin.RuleLockModified || !r.Failed {
			t.Errorf("json: exit %d %s", code, stdout)
		}
		if after, _ := os.ReadFile(edited); !bytes.Equal(before, after) {
			t.Error("the lock was changed")
		}
		if code, _, stderr := runCLI(t, "verify-pin", "--lock", filepath.Join(dir, "none.lock"), "--", server); code != 2 || !strings.Contains(stderr, "no such file") {
			t.Errorf("missing lock: exit %d %s", code, stderr)
		}
	})
}

func TestPinCapabilitiesOverride(t *testing.T) {
	t.Parallel()
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	caps := filepath.Join(dir, "caps.json")
	os.WriteFile(caps, []byte(`{"tools":{"run_command":["read"]}}`), 0o644)
	lock := filepath.Join(dir, "l.lock")
	code, stdout, stderr := runCLI(t, "pin", "--lock", lock, "--tofu", "--capabilities", caps, "--format", "json", "--", server, "--mode", "rugpull")
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	var out struct {
		Capabilities map[string]capability.Tool `json:"capabilities"`
		Approval     pin.Approval               `json:"approval"`
		LockDigest   string                     `json:"lockDigest"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if rc := out.Capabilities["run_command"]; !rc.Overridden || len(rc.Capabilities) != 1 || rc.Capabilities[0] != capability.Read {
		t.Errorf("run_command: %+v", rc)
	}
	l, err := pin.Read(lock)
	if err != nil || l.Capabilities["run_command"][0] != capability.Read || l.LockDigest != out.LockDigest {
		t.Errorf("lock overrides %v %v", l, err)
	}
	// Overrides of tools the server does not have, or malformed: refused.
	os.WriteFile(caps, []byte(`{"tools":{"no_such_tool":["read"]}}`), 0o644)
	if code, _, stderr := runCLI(t, "pin", "--lock", filepath.Join(dir, "x.lock"), "--tofu", "--capabilities", caps, "--", server); code != 2 || !strings.Contains(stderr, "no_such_tool") {
		t.Errorf("unknown tool: exit %d %s", code, stderr)
	}
	os.WriteFile(caps, []byte(`{"tools":{"read_file":["root"]}}`), 0o644)
	if code, _, stderr := runCLI(t, "pin", "--lock", filepath.Join(dir, "x.lock"), "--tofu", "--capabilities", caps, "--", server); code != 2 || !strings.Contains(stderr, `"root" is not a capability`) {
		t.Errorf("bad capability: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.lock")); err == nil {
		t.Error("a lock was written")
	}
}

// A bundle signed with a key ('mcpsign keygen', 'mcpsign sign key'): pin
// verifies it and records the evidence; another key, or a server that
// changed since signing, pins nothing.
func TestPinKeyBundle(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	// The keys and the bundle of alice over the example server, made once
	// with keygen and sign key for the tests that need them.
	d := discoverySetup(t)
	server, bundle := d.server, d.honest
	lock := filepath.Join(t.TempDir(), "l.lock")
	code, stdout, stderr := runCLI(t, "pin", "--lock", lock, "--bundle", bundle, "--key", d.alice.pub, "--", server)
	if code != 0 {
		t.Fatalf("pin: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "WARNING") || !strings.Contains(stdout, "approval: key sha256:") {
		t.Errorf("output:\n%s%s", stdout, stderr)
	}
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	bdata, _ := os.ReadFile(bundle)
	if l.Approval.Method != verify.MethodKey || !strings.HasPrefix(l.Approval.Identity, "sha256:") || l.Approval.BundleDigest != verify.BundleDigest(bdata) {
		t.Errorf("approval %+v", l.Approval)
	}
	for name, args := range map[string][]string{
		"another key":        {"--key", d.malloryKey.pub, "--", server},
		"the server changed": {"--key", d.alice.pub, "--", server, "--mode", "rugpull"},
	} {
		lock2 := filepath.Join(t.TempDir(), "l.lock")
		code, stdout, stderr := runCLI(t, append([]string{"pin", "--lock", lock2, "--bundle", bundle}, args...)...)
		if code != 1 || !strings.Contains(stderr, "nothing pinned") {
			t.Errorf("%s: exit %d\n%s%s", name, code, stdout, stderr)
		}
		if _, err := os.Stat(lock2); err == nil {
			t.Errorf("%s: a lock was written", name)
		}
	}
	if code, _, stderr := runCLI(t, "pin", "--lock", lock, "--tofu", "--key", d.alice.pub, "--", server); code != 2 || !strings.Contains(stderr, "--tofu has none") {
		t.Errorf("--tofu with --key: exit %d %s", code, stderr)
	}
}

// Keyless: a bundle signed against the local Sigstore stack (Fulcio, Rekor,
// TSA on loopback) pins with the signer, issuer and log entry.
func TestPinKeyless(t *testing.T) {
	env := sigstack.Require(t)
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	email := "pin-keyless@example.com"
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte(env.FreshToken(t, email)), 0o600)
	bundle := filepath.Join(dir, "k.sigstore.json")
	if code, _, stderr := runCLI(t, "sign", "--signing-config", env.SigningConfig, "--trusted-root", env.TrustedRoot,
		"--identity-token", tokenFile, "-o", bundle, "--", server); code != 0 {
		t.Fatalf("sign: %s", stderr)
	}
	lock := filepath.Join(dir, "l.lock")
	code, stdout, stderr := runCLI(t, "pin", "--lock", lock, "--bundle", bundle, "--trusted-root", env.TrustedRoot,
		"--certificate-identity", email, "--certificate-oidc-issuer", env.OIDCIssuer, "--", server)
	if code != 0 {
		t.Fatalf("pin: exit %d\n%s%s", code, stdout, stderr)
	}
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	a := l.Approval
	if a.Method != verify.MethodSigstore || a.Identity != email || a.Issuer != env.OIDCIssuer || a.Tlog == nil || a.Tlog.LogID == "" {
		t.Errorf("approval %+v", a)
	}
	// Another identity pins nothing.
	code, _, stderr = runCLI(t, "pin", "--lock", filepath.Join(dir, "m.lock"), "--bundle", bundle, "--trusted-root", env.TrustedRoot,
		"--certificate-identity", "mallory@example.com", "--certificate-oidc-issuer", env.OIDCIssuer, "--", server)
	if code != 1 {
		t.Errorf("another identity: exit %d %s", code, stderr)
	}
}

func TestDiffCommand(t *testing.T) {
	t.Parallel()
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	honest, rug := filepath.Join(dir, "honest.json"), filepath.Join(dir, "rug.json")
	for path, mode := range map[string]string{honest: "honest", rug: "rugpull"} {
		if code, _, stderr := runCLI(t, "snapshot", "-o", path, "--", server, "--mode", mode); code != 0 {
			t.Fatalf("snapshot: %s", stderr)
		}
	}
	lock := filepath.Join(dir, "l.lock")
	if code, _, stderr := runCLI(t, "pin", honest, "--lock", lock, "--tofu"); code != 0 {
		t.Fatal(stderr)
	}
	k, _ := sharedKeys(t)
	bundle := filepath.Join(dir, "b.sigstore.json")
	if code, _, stderr := runSetup(t, keysEnv(), "sign", "key", honest, "--key", k.key, "--password-env", "PW", "-o", bundle); code != 0 {
		t.Fatal(stderr)
	}
	url := fixtures.StartExampleHTTP(t, "rugpull")

	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"snapshots", []string{honest, rug}, 0, []string{"(snapshot)", `\u{200B}<IMPORTANT>\u{202E}`, "BREAKING new-capability", "BREAKING hidden-characters: tool \"search_notes\": \"description\" gained hidden characters (U+200B, U+202C, U+202E)", "1 added, 0 removed, 1 changed; 2 breaking changes"}},
		{"fail on breaking", []string{honest, rug, "--fail-on", "breaking"}, 1, []string{"BREAKING"}},
		{"fail on capability", []string{honest, rug, "--fail-on", "capability"}, 1, []string{"BREAKING new-capability: new tool \"run_command\" has the exec capability"}},
		{"fail on drift", []string{honest, rug, "--fail-on", "drift"}, 1, []string{"BREAKING"}},
		{"never", []string{honest, rug, "--fail-on", "never"}, 0, []string{"BREAKING"}},
		{"none is never", []string{honest, rug, "--fail-on", "none"}, 0, []string{"BREAKING"}},
		{"fail on any, no change", []string{lock, server + " --mode honest", "--fail-on", "any"}, 0, []string{"(lock)", "(live)", "no differences"}},
		{"reversed: removal is breaking", []string{rug, honest, "--fail-on", "breaking"}, 1, []string{"- tool \"run_command\": removed", "BREAKING removed-definition"}},
		{"bundle side is unverified", []string{bundle, rug}, 0, []string{"(bundle)", "UNVERIFIED", "~ tool \"search_notes\": changed"}},
		{"live HTTP, token in the URL not shown", []string{lock, url + "?token=s3cret"}, 0, []string{"(live)", "+ tool \"run_command\": added"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"diff"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
			if strings.Contains(stdout+stderr, "s3cret") || strings.ContainsAny(stdout, "\u200b\u202e") {
				t.Errorf("output shows a token or raw hidden characters:\n%s", stdout)
			}
		})
	}
	code, stdout, _ := runCLI(t, "diff", honest, rug, "--format", "json", "--fail-on", "any")
	var d struct {
		Changed, Failed bool
		FailOn          string `json:"failOn"`
		Definitions     []struct{ Kind, Key, Change string }
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != 1 || !d.Changed || !d.Failed || len(d.Definitions) != 2 {
		t.Errorf("json: exit %d %v %s", code, err, stdout)
	}
	// A modified lock is refused as a side.
	data, _ := os.ReadFile(lock)
	bad := filepath.Join(dir, "bad.lock")
	os.WriteFile(bad, bytes.Replace(data, []byte("Delete a note"), []byte("Delete a nose"), 1), 0o644)
	if code, _, stderr := runCLI(t, "diff", bad, rug); code != 2 || !strings.Contains(stderr, "side A") || !strings.Contains(stderr, "modified") {
		t.Errorf("modified lock side: exit %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "diff", honest); code != 2 {
		t.Errorf("one side: exit %d %s", code, stderr)
	}
}
