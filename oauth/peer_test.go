package oauth_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/oauthtest"
)

// TestPeerMcpRemote measures the sign-in and a cached run of mcpsign
// against the peer, mcp-remote (its mcp-remote-client: sign in, list the
// tools), on the same authorization and resource servers in the same run.
// It needs both programs: MCPSIGN_BIN (a built mcpsign) and
// MCPSIGN_PEER_MCP_REMOTE_CLIENT (node_modules/.bin/mcp-remote-client of
// mcp-remote 0.15.1); it skips without them. Each program prints its
// authorization URL on stderr (no browser), which the test's browser then
// follows.
func TestPeerMcpRemote(t *testing.T) {
	mcpsign, peer := os.Getenv("MCPSIGN_BIN"), os.Getenv("MCPSIGN_PEER_MCP_REMOTE_CLIENT")
	if mcpsign == "" || peer == "" {
		t.Skip("MCPSIGN_BIN and MCPSIGN_PEER_MCP_REMOTE_CLIENT not set")
	}
	authURL := regexp.MustCompile(`http://127\.0\.0\.1:\d+/authorize\?\S+`)
	// run runs argv, plays the browser for every authorization URL it
	// prints, and returns its wall time and stderr.
	run := func(env []string, argv ...string) (time.Duration, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout = io.Discard
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			all.WriteString(line + "\n")
			if u := authURL.FindString(line); u != "" {
				go oauthtest.Browser(ctx, u)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v\n%s", argv[0], err, all.String())
		}
		return time.Since(start), all.String()
	}
	type result struct {
		first, cached            time.Duration
		registrations, exchanges int64
		accepted, refused        int64
	}
	measure := func(name string, argv func(url, dir string) ([]string, []string)) result {
		as := oauthtest.NewAS(t)
		rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha", "beta"}})
		dir := t.TempDir()
		env, args := argv(rs.URL, dir)
		var r result
		r.first, _ = run(env, args...)
		r.cached, _ = run(env, args...)
		r.registrations, r.exchanges = as.Registrations.Load(), as.CodeExchanges.Load()
		r.accepted, r.refused = rs.Accepted.Load(), rs.Refused.Load()
		t.Logf("%s: sign-in and listing %v, cached run %v; registrations %d, code exchanges %d; resource server: %d requests accepted, %d refused",
			name, r.first.Round(time.Millisecond), r.cached.Round(time.Millisecond), r.registrations, r.exchanges, r.accepted, r.refused)
		return r
	}
	ours := measure("mcpsign digest --oauth", func(url, dir string) ([]string, []string) {
		return nil, []string{mcpsign, "digest", "--oauth", "--no-browser", "--oauth-cache-dir", dir, url}
	})
	theirs := measure("mcp-remote-client", func(url, dir string) ([]string, []string) {
		// No browser: PATH without xdg-open; the config dir of its own.
		return []string{"MCP_REMOTE_CONFIG_DIR=" + dir, "BROWSER=false"}, []string{peer, url, "--allow-http"}
	})
	t.Logf("mcpsign/mcp-remote: sign-in %.2f, cached %.2f", ours.first.Seconds()/theirs.first.Seconds(), ours.cached.Seconds()/theirs.cached.Seconds())
	if ours.exchanges != 1 || ours.registrations != 1 {
		t.Errorf("mcpsign: %d registrations, %d code exchanges; want 1 each", ours.registrations, ours.exchanges)
	}
}
