//go:build unix

package main

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestRegistryServeHangupWhileLoading: a SIGHUP that comes while registry
// serve loads its first set (a verification run takes minutes; a
// configuration tool sends SIGHUP whenever it rewrites a file) does not
// end the process, SIGHUP's default action: it goes on to serve.
func TestRegistryServeHangupWhileLoading(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	for _, tc := range []struct{ name string }{{"--verify, source slow to answer"}} {
		t.Run(tc.name, func(t *testing.T) {
			asked, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				once.Do(func() { close(asked) })
				<-release
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"servers":[],"metadata":{"count":0}}`))
			}))
			defer src.Close()
			var releaseOnce sync.Once
			defer releaseOnce.Do(func() { close(release) })
			pol := filepath.Join(t.TempDir(), "policy.json")
			os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{}}}`), 0o644)
			cmd := exec.Command(mcpsign, "registry", "serve", "--listen", "127.0.0.1:0", "--verify", src.URL, "--policy", pol, "--offline")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			select {
			case <-asked:
			case <-time.After(time.Minute): // a hang bound: the process's start, under load
				t.Fatal("the source was never asked")
			}
			cmd.Process.Signal(syscall.SIGHUP)
			time.Sleep(100 * time.Millisecond)
			releaseOnce.Do(func() { close(release) })
			sc := bufio.NewScanner(stderr)
			found := false
			var out []string
			for sc.Scan() {
				out = append(out, sc.Text())
				if strings.Contains(sc.Text(), "registry serve: 0 entries on http://127.0.0.1:") {
					found = true
					break
				}
			}
			if !found {
				err := cmd.Wait()
				t.Fatalf("not serving after a SIGHUP while loading: %v\n%s", err, strings.Join(out, "\n"))
			}
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit: %v", err)
			}
		})
	}
}
