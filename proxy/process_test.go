package proxy

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCommandStderr: a stdio server's stderr reaches UpstreamEnv.Stderr
// line by line, every control character escaped (a server must not write
// terminal escape sequences through the proxy).
func TestCommandStderr(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	up := CommandUpstream([]string{"sh", "-c", `printf 'line one\n\033[31mred\n' >&2`}, CommandOptions{})
	conn, err := up.Connect(testContext(t), UpstreamEnv{Stderr: &stderr, MaxMessageBytes: 1 << 10, Timeout: time.Second, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !conn.Wait(testTimeout) {
		t.Error("the server did not exit")
	}
	conn.Stop(time.Second) // returns once its stderr was copied
	got := stderr.String()
	if !strings.HasPrefix(got, "line one\n") || !strings.Contains(got, "red\n") || strings.Contains(got, "\x1b") {
		t.Errorf("the server's stderr reached the proxy's as %q, want its two lines, the escape character escaped", got)
	}
}
