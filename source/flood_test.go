package source

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/fixtures"
)

// TestListingBudgetFlood lists a server that answers every tools/list page
// with 15 MiB and a new cursor, through the mcpsign command as a host runs
// it: the listing stops at the byte budget (64 MiB by default) with a clear
// error, and the peak memory of the process stays a small multiple of the
// budget (without the budget it grew until the timeout: 5.7 GB in 30 s).
func TestListingBudgetFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods 64 MiB through a pipe")
	}
	mcpsign := fixtures.BuildMcpsign(t)
	bad := fixtures.BuildBadServer(t)
	for _, tt := range []struct {
		name    string
		args    []string
		maxRSS  int64 // bytes
		message string
	}{
		{name: "default budget", maxRSS: 4 * DefaultMaxListingBytes, message: "listing too large: the pages of this listing hold more than 67108864 bytes"},
		{name: "smaller budget", args: []string{"--max-listing-bytes", "20000000"}, maxRSS: 4 * DefaultMaxListingBytes, message: "more than 20000000 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"digest"}, tt.args...)
			args = append(args, "--", bad, "--behavior", fixtures.BadFloodPages)
			cmd := exec.Command(mcpsign, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("mcpsign digest: %v, want exit 2; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.message) {
				t.Errorf("stderr does not say %q:\n%s", tt.message, stderr.String())
			}
			peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024
			t.Logf("refused after %v; peak RSS %d MiB", time.Since(start).Round(time.Millisecond), peak>>20)
			if peak > tt.maxRSS {
				t.Errorf("peak RSS %d MiB, want at most %d MiB", peak>>20, tt.maxRSS>>20)
			}
		})
	}
}
