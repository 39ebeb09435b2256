//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKeyPathFIFO: a key (or CA) path that is a named pipe nobody writes
// is read at once as what it holds (nothing) and refused, by every flag
// that reads one, instead of holding the command for ever (every key
// read goes through internal/boundedfile's non-blocking
// open).
func TestKeyPathFIFO(t *testing.T) {
	t.Parallel()
	d := discoverySetup(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "key.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for name, args := range map[string][]string{
		"verify --key":        {"verify", "key", "--key", fifo, "--bundle", d.honest, "--", d.server},
		"pin --key":           {"pin", "--lock", filepath.Join(dir, "p.lock"), "--key", fifo, "--bundle", d.honest, "--", d.server},
		"proxy --key":         {"proxy", "--lock", filepath.Join(dir, "x.lock"), "--key", fifo, "--bundle", d.honest, "--", d.server},
		"sign key --key":      {"sign", "key", "--key", fifo, "--password-env", "PW", "-o", filepath.Join(dir, "b.json"), "--", d.server},
		"verify --ca-roots":   {"verify", "certificate", "--ca-roots", fifo, "--bundle", d.honest, "--certificate-identity", "x", "--certificate-oidc-issuer", "y", "--", d.server},
		"verify bundle --key": {"verify", "bundle", "--key", fifo, "--bundle", d.honest, d.honest},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, stdout, stderr := runWith(t, keysEnv(), args...)
				done <- result{code, stdout, stderr}
			}()
			select {
			case r := <-done:
				if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "key.fifo") {
					t.Fatalf("exit %d, want 2 naming the FIFO:\n%s%s", r.code, r.stdout, r.stderr)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("still waiting on the FIFO after 20 s")
			}
		})
	}
}
