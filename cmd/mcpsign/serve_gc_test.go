package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestServeGCPercent: the serve process runs its collector at
// serveGCPercent unless the operator set GOGC, whose value then stands
// (docs/DEPLOY.md, "CPU and memory"); /metrics says which
// (go_gc_gogc_percent).
func TestServeGCPercent(t *testing.T) {
	mcpsign := fixtures.BuildMcpsign(t)
	server := fixtures.BuildExampleServerNoRace(t)
	for _, tc := range []struct {
		name, gogc, want string
	}{
		{"default", "", "400"},
		{"operator's GOGC", "150", "150"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, mcpsign, "serve", "--listen", "127.0.0.1:0",
				"--lock", filepath.Join(t.TempDir(), "mcp.lock"), "--tofu", "--", server)
			env := []string{}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOGC=") {
					env = append(env, kv)
				}
			}
			if tc.gogc != "" {
				env = append(env, "GOGC="+tc.gogc)
			}
			cmd.Env = env
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = cmd.Process.Signal(os.Interrupt)
				_ = cmd.Wait()
			}()
			listening := regexp.MustCompile(`listening on (http://[^ ]+)/mcp`)
			base := ""
			for sc := bufio.NewScanner(stderr); base == "" && sc.Scan(); {
				if m := listening.FindStringSubmatch(sc.Text()); m != nil {
					base = m[1]
				}
			}
			if base == "" {
				t.Fatal("serve never said where it listens")
			}
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := regexp.MustCompile(`(?m)^go_gc_gogc_percent (\S+)$`).FindSubmatch(body)
			if m == nil {
				t.Fatalf("no go_gc_gogc_percent in /metrics:\n%.2000s", body)
			}
			if string(m[1]) != tc.want {
				t.Errorf("go_gc_gogc_percent %s with GOGC=%q, want %s", m[1], tc.gogc, tc.want)
			}
		})
	}
}
