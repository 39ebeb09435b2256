package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
)

func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kept")
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Out: &out, Server: []string{fixtures.BuildExampleServer(t)}, Dir: dir}); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"serves 5 tools, 2 prompts, 1 resource template and instructions", "✓ verified", "✓ signed first use", "✓ allowed", "pin-tool-added", "✓ blocked before any call", "✓ blocked: no call after the change"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the narration lacks %q:\n%s", want, out.String())
		}
	}
	// The kept files: a lock that reads, a private key only its owner reads.
	if _, err := pin.Read(filepath.Join(dir, "mcp.lock")); err != nil {
		t.Errorf("lock: %v", err)
	}
	if l, err := pin.Read(filepath.Join(dir, "first-use.lock")); err != nil || l.Approval.Method != evidence.MethodKey {
		t.Errorf("first-use.lock: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "publisher.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("publisher.key: %v %v", fi.Mode(), err)
	}
	if strings.Contains(out.String(), "PRIVATE KEY") {
		t.Errorf("the narration shows the private key")
	}
	// 'mcpsign demo --help' describes Steps: as many as Run shows.
	headings := regexp.MustCompile(`(?m)^[0-9]+\. `).FindAllString(out.String(), -1)
	if len(headings) != len(Steps) {
		t.Errorf("Run shows %d steps, Steps (the help) describes %d", len(headings), len(Steps))
	}
}

func TestRunFails(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), Options{Out: &out, Server: []string{filepath.Join(t.TempDir(), "no-such-server")}})
	if err == nil || errors.Is(err, ErrUnexpected) {
		t.Fatalf("Run: %v, want a failure to start the server", err)
	}
	if !strings.Contains(out.String(), "✗") {
		t.Errorf("the narration does not say it failed:\n%s", out.String())
	}
	if err := Run(context.Background(), Options{}); err == nil {
		t.Error("Run without a server command succeeded")
	}
}
