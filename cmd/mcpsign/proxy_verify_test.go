package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/proxy"
)

// TestProxyVerifyAnswer: 'mcpsign proxy-verify' answers with what the
// verification established (the approval, the server the statement signs,
// no signing time for a key signature checked at the current time), in the
// form proxy.CommandVerifier reads; a bundle by another key, or definitions
// that are not a snapshot, refuse with the reason on stderr.
func TestProxyVerifyAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice, mallory := sharedKeys(t)
	pubs := map[string]string{"alice": alice.pub, "mallory": mallory.pub}
	const signed = `{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"notes","version":"2.0.0"},"protocolVersion":"2025-11-25",` +
		`"tools":[{"name":"read_note","description":"Read a note.","inputSchema":{"type":"object"}}],"prompts":[],"resourceTemplates":[],"capturedAt":"2026-11-29T15:00:00Z"}`
	snapFile := filepath.Join(dir, "notes.snapshot.json")
	if err := os.WriteFile(snapFile, []byte(signed), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "notes.sigstore.json")
	if code, _, stderr := runSetup(t, keysEnv(), "sign", "key", "--key", alice.key, "--password-env", "PW", "-o", bundle, snapFile); code != 0 {
		t.Fatalf("sign: %s", stderr)
	}
	// The server announces itself as another server: the answer names the
	// signed one.
	observed := strings.Replace(signed, `"name":"notes","version":"2.0.0"`, `"name":"twofaced","version":"9.9.9"`, 1)

	verifyArgs := func(who string) []string {
		return []string{proxyVerifyCommand, "--bundle", bundle, "--key", pubs[who]}
	}
	tests := []struct {
		name      string
		who       string
		stdin     string
		code      int
		stderrHas string
	}{
		{"verified", "alice", observed, 0, ""},
		{"another key", "mallory", observed, 1, "verification failed"},
		{"not a snapshot", "alice", `{"kind":"mcpsign.snapshot","snapshotVersion":2}`, 2, "the definitions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			a := &app{stdin: strings.NewReader(tc.stdin), stdout: &out, stderr: &errb,
				getenv: func(k string) string { return keysEnv()[k] }, isTerminal: func() bool { return false }}
			code := run(context.Background(), verifyArgs(tc.who), a)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errb.String())
			}
			if tc.code != 0 {
				if out.Len() != 0 || !strings.Contains(errb.String(), tc.stderrHas) {
					t.Errorf("stdout %q stderr %q, want nothing and %q", out.String(), errb.String(), tc.stderrHas)
				}
				return
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(out.Bytes(), &m); err != nil {
				t.Fatalf("the answer is not a JSON object: %v\n%s", err, out.String())
			}
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, []string{"approval", "server"}) {
				t.Errorf("members %q, want approval and server (no signedAt without a verified time)", keys)
			}
			var v pin.Verified
			if err := json.Unmarshal(out.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			if v.Server != (digest.ServerInfo{Name: "notes", Version: "2.0.0"}) || v.Approval.Method != evidence.MethodKey ||
				!strings.HasPrefix(v.Approval.Identity, "sha256:") || !strings.HasPrefix(v.Approval.BundleDigest, "sha256:") {
				t.Errorf("answer %+v", v)
			}
		})
	}

	// The installed executable, through the protocol mcpsign-proxy speaks.
	t.Run("through CommandVerifier", func(t *testing.T) {
		snap, err := digest.ParseSnapshot([]byte(observed))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		v, err := proxy.CommandVerifier(append([]string{fixtures.BuildMcpsign(t)}, verifyArgs("alice")...), "--"+serverAdvertisedFlag)(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		if v.Server.Name != "notes" || v.Approval.Method != evidence.MethodKey || !v.SignedAt.IsZero() {
			t.Errorf("answer %+v", v)
		}
		if _, err := proxy.CommandVerifier(append([]string{fixtures.BuildMcpsign(t)}, verifyArgs("mallory")...), "--"+serverAdvertisedFlag)(ctx, snap); err == nil ||
			!strings.Contains(err.Error(), "verification failed") {
			t.Errorf("another key: %v, want the verifier's reason", err)
		}
	})
}
