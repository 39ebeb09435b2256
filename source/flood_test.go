package source

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestListingBudgetFlood lists a server that answers every tools/list page
// with 15 MiB and a new cursor, in a process of its own as mcpsign digest
// does (the test binary as the lister, listerMain: Load over stdio): the
// listing stops at the byte budget (64 MiB by default) with a clear error,
// and the peak memory of the process stays a small multiple of the budget
// (without the budget it grew until the timeout: 5.7 GB in 30 s).
//
// In a -race test binary the lister would be race-instrumented (several
// times the memory, and slow): the process measured is then mcpsign digest,
// from the run's shared build (not race-instrumented).
func TestListingBudgetFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods 64 MiB through a pipe")
	}
	lister := floodLister(t)
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
			// The peak is the lowest of up to three runs: on a loaded machine
			// the lister's garbage collector can fall behind its reads for
			// one run (298 MiB once in CI, 148-172 MiB otherwise). A
			// regression exceeds the bound in every run.
			var peak int64 = -1
			for attempt := 1; attempt <= 3 && (peak < 0 || peak > tt.maxRSS); attempt++ {
				args := append(append(lister[1:], tt.args...), "--", bad, "--behavior", fixtures.BadFloodPages)
				cmd := exec.Command(lister[0], args...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				start := time.Now()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				stop := make(chan struct{})
				hwm := watchHWM(cmd.Process.Pid, stop)
				err := cmd.Wait()
				close(stop)
				polled := <-hwm
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ExitCode() != 2 {
					t.Fatalf("%q: %v, want exit 2; stderr:\n%s", lister, err, stderr.String())
				}
				if !strings.Contains(stderr.String(), tt.message) {
					t.Fatalf("stderr does not say %q:\n%s", tt.message, stderr.String())
				}
				p := ownPeakRSS(cmd.ProcessState, polled)
				t.Logf("run %d: refused after %v; peak RSS %d MiB (rusage %d MiB, /proc %d MiB)", attempt, time.Since(start).Round(time.Millisecond), p>>20, peakRSS(cmd.ProcessState)>>20, polled>>20)
				if peak < 0 || p < peak {
					peak = p
				}
			}
			if peak > tt.maxRSS {
				t.Errorf("peak RSS %d MiB in every run, want at most %d MiB", peak>>20, tt.maxRSS>>20)
			}
		})
	}
}

// floodLister returns the command line (before the lister's flags) of the
// process TestListingBudgetFlood measures: the test binary as the lister,
// or, under -race, mcpsign digest.
func floodLister(t *testing.T) []string {
	t.Helper()
	if raceBuild {
		return []string{fixtures.BuildMcpsign(t), "digest"}
	}
	return []string{fixtures.Executable(t, programLister)}
}
