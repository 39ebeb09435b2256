package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestListingProgress: a slow listing shows what it waits for on a
// terminal's stderr, never on stdout, and nothing with --quiet or when
// stderr is not a terminal.
func TestListingProgress(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	server := fixtures.BuildExampleServerNoRace(t)
	slow := []string{"--", sh, "-c", `sleep 0.7; exec "$0"`, server}
	for _, tc := range []struct {
		name     string
		terminal bool
		args     []string
		want     string // "" : nothing on stderr
	}{
		{"terminal", true, nil, "waiting for the server to answer initialize"},
		{"terminal, --quiet", true, []string{"--quiet"}, ""},
		// One version read (one slow start, not five): under -race on a
		// loaded machine five starts of the test binary as a server
		// outlasted the 5 s after which a slow listing is noticed, which
		// this row is not about.
		{"not a terminal", false, []string{"--protocol-version", "2026-07-28"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out the slow start (sleep 0.7)
			var out, errb bytes.Buffer
			a := &app{
				stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
				getenv:           func(string) string { return "" },
				isTerminal:       func() bool { return false },
				stderrIsTerminal: func() bool { return tc.terminal },
			}
			args := append(append([]string{"digest"}, tc.args...), slow...)
			if code := run(context.Background(), args, a); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if !strings.HasPrefix(out.String(), "mcpsign-example ") || strings.Contains(out.String(), "waiting") || strings.Contains(out.String(), "\r") {
				t.Errorf("stdout holds more than the digest:\n%q", out.String())
			}
			if tc.want == "" && errb.Len() != 0 {
				t.Errorf("stderr: %q, want nothing", errb.String())
			}
			if tc.want != "" && !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", errb.String(), tc.want)
			}
		})
	}
}
