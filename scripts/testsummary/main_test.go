package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// runGoTest runs go test -json on the sample package and returns its
// stream, once per environment for all the tests of this process.
func runGoTest(t *testing.T, env ...string) []byte {
	t.Helper()
	streamsMu.Lock()
	r, ok := streams[strings.Join(env, "\x00")]
	if !ok {
		r = &streamResult{}
		streams[strings.Join(env, "\x00")] = r
	}
	streamsMu.Unlock()
	r.once.Do(func() { r.out, r.err = goTestSample(env) })
	if errors.Is(r.err, exec.ErrNotFound) {
		t.Skip("no go command")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.out
}

type streamResult struct {
	once sync.Once
	out  []byte
	err  error
}

var (
	streamsMu sync.Mutex
	streams   = map[string]*streamResult{}
)

func goTestSample(env []string) ([]byte, error) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(gocmd, "test", "-count=1", "-json", "./testdata/sample")
	cmd.Env = append(os.Environ(), env...)
	out, _ := cmd.Output() // exits 1: the sample fails on purpose
	if !bytes.Contains(out, []byte(`"Action":"start"`)) {
		return nil, fmt.Errorf("no test2json stream from go test:\n%s", out)
	}
	return out, nil
}

// TestRealStream summarizes a real go test -json run: counts (subtests
// included), the failed test's output, each skip's reason, the closing
// line, and the exit status with and without -ci and an expected list.
func TestRealStream(t *testing.T) {
	t.Parallel()
	stream := runGoTest(t)
	tests := []struct {
		name     string
		expected string
		ci       bool
		code     int
		has      []string
		hasNot   []string
	}{
		{name: "plain", code: 1, has: []string{"this one fails", "needs a thing this machine lacks", "sub reason", "TestSub/skipped"}, hasNot: []string{"NOT EXPECTED"}},
		{name: "ci, nothing expected", ci: true, code: 1, has: []string{"[NOT EXPECTED on this machine]", "2 skip(s) not listed"}},
		{name: "ci, all expected", ci: true, code: 1,
			expected: "* scripts/testsummary/testdata/sample TestSkip the sample lacks it\n* scripts/testsummary/testdata/sample TestSub/* sub-tests may skip\n",
			has:      []string{"[expected: the sample lacks it]", "[expected: sub-tests may skip]"}, hasNot: []string{"not listed"}},
		{name: "expected on another OS only", ci: true, code: 1,
			expected: "plan9 scripts/testsummary/testdata/sample TestSkip only there\n",
			has:      []string{"2 skip(s) not listed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exp, err := parseExpected(tc.expected, machine{goos: "linux"})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			s := newSummary(&out)
			if err := s.read(bytes.NewReader(stream)); err != nil {
				t.Fatal(err)
			}
			code := s.report(exp, tc.ci)
			got := out.String()
			lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
			if last := lines[len(lines)-1]; last != "5 passed, 1 failed, 2 skipped" {
				t.Errorf("closing line %q\n%s", last, got)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, h := range tc.has {
				if !strings.Contains(got, h) {
					t.Errorf("output lacks %q:\n%s", h, got)
				}
			}
			for _, h := range tc.hasNot {
				if strings.Contains(got, h) {
					t.Errorf("output has %q:\n%s", h, got)
				}
			}
		})
	}
}

// TestPanicCountsTheRunningTest: a test binary that dies mid-test fails
// that test (its output shown), not nothing.
func TestPanicCountsTheRunningTest(t *testing.T) {
	t.Parallel()
	stream := runGoTest(t, "TESTSUMMARY_PANIC=1")
	var out bytes.Buffer
	s := newSummary(&out)
	if err := s.read(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if code := s.report(nil, false); code != 1 {
		t.Errorf("exit %d", code)
	}
	got := out.String()
	if !strings.Contains(got, "boom") || !strings.Contains(got, "TestPanic") || s.failed < 2 {
		t.Errorf("panic not reported as a failure (%d failed):\n%s", s.failed, got)
	}
}

// TestSlowest lists the slowest packages and top-level tests of a real
// stream, slowest first, before the closing line.
func TestSlowest(t *testing.T) {
	t.Parallel()
	stream := runGoTest(t)
	var out bytes.Buffer
	s := newSummary(&out)
	s.slowest = 2
	if err := s.read(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	s.report(nil, false)
	got := out.String()
	pkgs := strings.Index(got, "Slowest packages:\n")
	tests := strings.Index(got, "Slowest top-level tests:\n")
	closing := strings.Index(got, "5 passed, 1 failed, 2 skipped")
	if pkgs < 0 || tests < pkgs || closing < tests {
		t.Fatalf("no slowest lists before the closing line:\n%s", got)
	}
	pkgLines := strings.Split(strings.TrimSpace(got[pkgs:tests]), "\n")[1:]
	if len(pkgLines) != 1 || !strings.HasSuffix(pkgLines[0], "s  github.com/mcpsign/mcpsign/scripts/testsummary/testdata/sample") {
		t.Errorf("slowest packages %q, want the sample's one line", pkgLines)
	}
	testLines := strings.Split(strings.TrimSpace(got[tests:closing]), "\n")[1:]
	if len(testLines) != 2 {
		t.Fatalf("slowest tests %q, want 2 lines", testLines)
	}
	var prev float64 = 1e9
	for _, l := range testLines {
		var sec float64
		var pkg, name string
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "%fs %s %s", &sec, &pkg, &name); err != nil || strings.Contains(name, "/") || sec > prev {
			t.Errorf("line %q: %v (a top-level test, not slower than the one above)", l, err)
		}
		prev = sec
	}
}

func TestExpectedFile(t *testing.T) {
	for _, bad := range []string{"* pkg Test", "* pkg [ reason"} {
		if _, err := parseExpected(bad, machine{goos: "linux"}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	exp, err := parseExpected("# comment\nroot cmd/mcpsign TestW/read-only_directory root writes anywhere\nwindows,darwin x TestY why\n", machine{goos: "linux", root: true})
	if err != nil || len(exp) != 1 || exp[0].reason != "root writes anywhere" {
		t.Fatalf("%v %+v", err, exp)
	}
	if _, ok := match(exp, testKey{"github.com/mcpsign/mcpsign/cmd/mcpsign", "TestW/read-only_directory"}); !ok {
		t.Error("module-relative package not matched")
	}
	if _, ok := match(exp, testKey{"github.com/mcpsign/mcpsign/cmd/mcpsign-proxy", "TestW/read-only_directory"}); ok {
		t.Error("matched another package")
	}
	if exp, _ := parseExpected("root x TestY why\n", machine{goos: "linux"}); len(exp) != 0 {
		t.Error("root condition held for a non-root user")
	}
}

// TestInterruptedRun: a run stopped by Ctrl-C is said to be interrupted,
// the tests it stopped did not finish (they did not fail), and a test that
// failed before still failed; a test that started and never ended in a
// stream that stopped is never left out of the count.
func TestInterruptedRun(t *testing.T) {
	t.Parallel()
	stream := runGoTest(t, "TESTSUMMARY_INTERRUPT=1")
	// The stream as far as the start of TestPass: go test was killed.
	i := bytes.Index(stream, []byte(`"Action":"run","Package":"github.com/mcpsign/mcpsign/scripts/testsummary/testdata/sample","Test":"TestPass"`))
	if i < 0 {
		t.Fatalf("no run event of TestPass in\n%s", stream)
	}
	cut := stream[:i+bytes.IndexByte(stream[i:], '\n')+1]
	const sample = "github.com/mcpsign/mcpsign/scripts/testsummary/testdata/sample"
	tests := []struct {
		name        string
		stream      []byte
		interrupted bool
		closing     string
		failed      []string // tests under "Failed"
		unfinished  []string // tests under "Did not finish"
	}{
		{name: "killed by SIGINT, not told", stream: stream, closing: "4 passed, 2 failed, 2 skipped",
			failed: []string{"TestFail", "TestInterrupted"}},
		{name: "killed by SIGINT, interrupted", stream: stream, interrupted: true,
			closing: "INTERRUPTED: 4 passed, 1 failed, 2 skipped, 1 did not finish",
			failed:  []string{"TestFail"}, unfinished: []string{"TestInterrupted"}},
		{name: "stream cut, not told", stream: cut, closing: "0 passed, 1 failed, 0 skipped", failed: []string{"TestPass"}},
		{name: "stream cut, interrupted", stream: cut, interrupted: true,
			closing: "INTERRUPTED: 0 passed, 0 failed, 0 skipped, 1 did not finish", unfinished: []string{"TestPass"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := newSummary(&out)
			s.interrupted = tc.interrupted
			if err := s.read(bytes.NewReader(tc.stream)); err != nil {
				t.Fatal(err)
			}
			if code := s.report(nil, false); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			got := out.String()
			lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tc.closing) {
				t.Errorf("closing line %q, want it to start %q\n%s", last, tc.closing, got)
			}
			section := func(title string) []string {
				var names []string
				_, rest, ok := strings.Cut(got, "\n"+title)
				if !ok {
					return nil
				}
				for _, l := range strings.Split(rest, "\n")[1:] {
					if !strings.HasPrefix(l, "  "+sample+" ") {
						break
					}
					names = append(names, strings.TrimPrefix(l, "  "+sample+" "))
				}
				return names
			}
			if f := section("Failed ("); strings.Join(f, ",") != strings.Join(tc.failed, ",") {
				t.Errorf("failed %q, want %q\n%s", f, tc.failed, got)
			}
			if u := section("Did not finish"); strings.Join(u, ",") != strings.Join(tc.unfinished, ",") {
				t.Errorf("did not finish %q, want %q\n%s", u, tc.unfinished, got)
			}
		})
	}
}
