package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// runCLI runs mcpsign in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{
		stdin:      strings.NewReader(""),
		stdout:     &out,
		stderr:     &errb,
		getenv:     func(string) string { return "" },
		isTerminal: func() bool { return false },
	}
	code = run(context.Background(), args, a)
	return code, out.String(), errb.String()
}

func TestDigestAndSnapshot(t *testing.T) {
	t.Parallel()
	server := fixtures.BuildExampleServerNoRace(t)
	code, live, stderr := runCLI(t, "digest", "--format", "json", "--", server)
	if code != 0 {
		t.Fatalf("digest exit %d: %s", code, stderr)
	}
	var got digest.Report
	if err := json.Unmarshal([]byte(live), &got); err != nil {
		t.Fatal(err)
	}
	if got.Server.Name != "mcpsign-example" || got.Counts["tools"] != 5 || got.Counts["prompts"] != 2 || got.Counts["resourceTemplates"] != 1 {
		t.Errorf("unexpected listing: %+v", got)
	}
	if got.Instructions == nil || len(got.Invalid) != 0 || got.Sets["tools"] == nil {
		t.Errorf("instructions or sets missing: %s", live)
	}

	snap := filepath.Join(t.TempDir(), "example.snapshot.json")
	if code, _, stderr := runCLI(t, "snapshot", "-o", snap, "--", server); code != 0 {
		t.Fatalf("snapshot exit %d: %s", code, stderr)
	}
	code, fromFile, stderr := runCLI(t, "digest", "--format", "json", snap)
	if code != 0 {
		t.Fatalf("digest of snapshot exit %d: %s", code, stderr)
	}
	if fromFile != live {
		t.Errorf("digest of the snapshot differs from the live digest:\n%s\n%s", fromFile, live)
	}
	// An existing snapshot is not replaced without --force.
	before, _ := os.ReadFile(snap)
	if code, _, stderr := runCLI(t, "snapshot", "-o", snap, "--", server, "--mode", "rugpull"); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("overwrite without --force: exit %d, %s", code, stderr)
	}
	if after, _ := os.ReadFile(snap); !bytes.Equal(before, after) {
		t.Error("existing snapshot changed")
	}

	// Text output names the rug pull's hidden characters escaped.
	code, text, _ := runCLI(t, "digest", "--", server, "--mode", "rugpull")
	if code != 0 || !strings.Contains(text, "run_command") {
		t.Errorf("rugpull digest: exit %d\n%s", code, text)
	}
}

func TestDigestInvalidDefinitions(t *testing.T) {
	bad := fixtures.BuildBadServer(t)
	code, out, stderr := runCLI(t, "digest", "--", bad, "--behavior", "invalid-definitions")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"INVALID", "repeated member name", "invalid UTF-8", "2^53", "duplicate key", "none (a definition is invalid)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "cannot be digested") {
		t.Errorf("stderr: %s", stderr)
	}
	code, js, _ := runCLI(t, "digest", "--format", "json", "--", bad, "--behavior", "invalid-definitions")
	var got digest.Report
	if code != 1 || json.Unmarshal([]byte(js), &got) != nil || len(got.Invalid) == 0 || got.Sets["tools"] != nil {
		t.Errorf("json: exit %d %s", code, js)
	}
}

func TestDigestServerErrors(t *testing.T) {
	t.Parallel()
	bad := fixtures.BuildBadServer(t)
	// Only never-answers waits for its timeout; the others fail at once,
	// long before theirs.
	tests := []struct {
		behavior string
		timeout  string
		stage    string
	}{
		{"exits-at-once", "10s", "initialize"},
		{"bad-jsonrpc", "10s", "initialize"},
		{"never-answers", "300ms", "initialize: timeout: no complete answer within 300ms"},
		{"error-on-list", "10s", "tools/list page 1"},
		{"non-string-cursor", "10s", "nextCursor"},
	}
	for _, tt := range tests {
		t.Run(tt.behavior, func(t *testing.T) {
			code, _, stderr := runCLI(t, "digest", "--timeout", tt.timeout, "--", bad, "--behavior", tt.behavior)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			if !strings.Contains(stderr, tt.stage) {
				t.Errorf("stderr %q does not name %q", stderr, tt.stage)
			}
		})
	}
	if code, _, stderr := runCLI(t, "digest", "--format", "yaml", "x.json"); code != 2 || !strings.Contains(stderr, "--format") {
		t.Errorf("bad format: %d %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "digest", "--no-such-flag"); code != 2 {
		t.Errorf("unknown flag: exit %d", code)
	}
}
