// Command testsummary reads `go test -json` on its standard input and says
// what ran: it prints each package's result line, the output of every test
// that failed, every skip with its reason, and closes with the line
//
//	N passed, N failed, N skipped
//
// (subtests counted as tests). It exits 1 when a test or a package failed.
// A test that started and never ended (the binary died, or the stream
// stopped) failed: it did not finish.
//
// With -interrupted (scripts/test.sh passes it when the run was stopped by
// Ctrl-C or SIGTERM) such a test is not counted as failed but as not
// finished, and the closing line starts with "INTERRUPTED": an interrupted
// run is no result, and the tests it stopped did not fail. A test that
// reported its own failure before the interrupt still counts as failed.
// With -ci (scripts/test.sh passes it when $CI is set) a skip that the
// -expected file does not list for this machine fails the run too: in CI
// every test that can run here must run.
//
//	go test -json ./... | go run ./scripts/testsummary [-ci] [-expected scripts/expected-skips.txt]
//
// The expected-skips file has one skip a line, fields separated by white
// space: WHEN PACKAGE TEST REASON…, where WHEN is "*", "root" (the tests run
// as root) or a comma-separated list of GOOS values, PACKAGE the import path
// relative to the module ("cmd/mcpsign") and TEST a test name as go test
// prints it (a path.Match pattern: "TestX/read-only_directory", "Fuzz*/*").
// '#' starts a comment line.
//
// With -slowest N it also lists the N slowest packages and the N slowest
// top-level tests (the elapsed times go test reports; a test's time
// excludes its parallel subtests, which run after it returned), before the
// closing line: where a run's time goes.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
)

func main() {
	ci := flag.Bool("ci", false, "fail on a skip that -expected does not list for this machine")
	expected := flag.String("expected", "", "`file` of expected skips (see the package comment)")
	slowest := flag.Int("slowest", 0, "list the `N` slowest packages and top-level tests")
	interrupted := flag.Bool("interrupted", false, "the run was interrupted: tests that did not finish did not fail")
	flag.Parse()
	var exp []expectedSkip
	if *expected != "" {
		data, err := os.ReadFile(*expected)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
		if exp, err = parseExpected(string(data), machine{goos: runtime.GOOS, root: os.Geteuid() == 0}); err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %s: %v\n", *expected, err)
			os.Exit(2)
		}
	}
	s := newSummary(os.Stdout)
	s.slowest = *slowest
	s.interrupted = *interrupted
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	os.Exit(s.report(exp, *ci))
}

// event is the part of a test2json event this program reads.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events
	Elapsed    float64
}

type testKey struct{ pkg, test string }

type skip struct {
	testKey
	reason string
}

type summary struct {
	w               io.Writer
	out             map[testKey][]string // output of tests still running
	passed, failed  int
	failedTests     []testKey
	failedPackages  []string // packages that failed with no failed test (build, panic, timeout)
	skips           []skip
	pkgFailedTests  map[string]int
	running         map[string]map[string]bool // package -> tests started, not ended
	packagesWithRun map[string]bool
	slowest         int       // how many of the slowest to list (-slowest)
	interrupted     bool      // the run was interrupted (-interrupted)
	unfinished      []testKey // tests of an interrupted run that did not finish ("" test: a package)
	timings         []timing  // packages (test "") and top-level tests that ended
}

// timing is how long a package or a top-level test took.
type timing struct {
	testKey
	elapsed float64
}

func newSummary(w io.Writer) *summary {
	return &summary{
		w: w, out: map[testKey][]string{}, pkgFailedTests: map[string]int{},
		running: map[string]map[string]bool{}, packagesWithRun: map[string]bool{},
	}
}

// read consumes the event stream; a line that is not an event (the go
// command's own messages) is copied through.
func (s *summary) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.line(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *summary) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		fmt.Fprint(s.w, line)
		return
	}
	k := testKey{e.Package, e.Test}
	if (e.Action == "pass" || e.Action == "fail") && !strings.Contains(e.Test, "/") {
		s.timings = append(s.timings, timing{k, e.Elapsed})
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.w, e.Output)
	case e.Action == "build-fail":
		// The package's own fail event follows and is counted.
	case e.Test == "":
		s.packageEvent(e)
	case e.Action == "run":
		if s.running[e.Package] == nil {
			s.running[e.Package] = map[string]bool{}
		}
		s.running[e.Package][e.Test] = true
	case e.Action == "output":
		s.out[k] = append(s.out[k], e.Output)
	case e.Action == "pass":
		s.passed++
		s.end(k)
	case e.Action == "fail":
		s.failed++
		s.failedTests = append(s.failedTests, k)
		s.pkgFailedTests[e.Package]++
		fmt.Fprint(s.w, strings.Join(s.out[k], ""))
		s.end(k)
	case e.Action == "skip":
		s.skips = append(s.skips, skip{k, skipReason(e.Test, s.out[k])})
		s.end(k)
	}
}

func (s *summary) end(k testKey) {
	delete(s.out, k)
	delete(s.running[k.pkg], k.test)
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		if o := e.Output; o != "PASS\n" && o != "FAIL\n" && !strings.HasPrefix(o, "=== ") {
			fmt.Fprint(s.w, o)
		}
	case "fail":
		// Tests still running when their package failed (a panic, a
		// timeout) failed with it: show what they printed.
		names := make([]string, 0, len(s.running[e.Package]))
		for name := range s.running[e.Package] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			s.didNotFinish(testKey{e.Package, name})
		}
		switch {
		case s.pkgFailedTests[e.Package] > 0 || len(names) > 0 && s.interrupted:
		case s.interrupted:
			s.unfinished = append(s.unfinished, testKey{e.Package, ""})
		default:
			s.failed++
			s.failedPackages = append(s.failedPackages, e.Package)
		}
		delete(s.running, e.Package)
	case "pass", "skip":
		delete(s.running, e.Package)
	}
}

// didNotFinish counts k, a test that started and never ended: failed (its
// output shown), or in an interrupted run, not finished.
func (s *summary) didNotFinish(k testKey) {
	if s.interrupted {
		s.unfinished = append(s.unfinished, k)
	} else {
		fmt.Fprint(s.w, strings.Join(s.out[k], ""))
		s.failed++
		s.failedTests = append(s.failedTests, k)
		s.pkgFailedTests[k.pkg]++
	}
	s.end(k)
}

// streamEnded counts the tests that started and never ended, in packages
// whose result never came (the stream stopped: go test was killed).
func (s *summary) streamEnded() {
	pkgs := make([]string, 0, len(s.running))
	for p := range s.running {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		names := make([]string, 0, len(s.running[p]))
		for name := range s.running[p] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			s.didNotFinish(testKey{p, name})
		}
	}
	s.running = map[string]map[string]bool{}
}

// skipReason is what a skipped test printed, without go test's own lines.
func skipReason(name string, out []string) string {
	var lines []string
	for _, o := range out {
		for _, l := range strings.Split(o, "\n") {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP: "+name) {
				continue
			}
			lines = append(lines, t)
		}
	}
	if len(lines) == 0 {
		return "(no reason given)"
	}
	return strings.Join(lines, "\n      ")
}

// report prints the skips, the failures and the closing line, and returns
// the exit status.
func (s *summary) report(exp []expectedSkip, ci bool) int {
	s.streamEnded()
	var unexpected []skip
	if len(s.skips) > 0 {
		fmt.Fprintf(s.w, "\nSkipped (%d):\n", len(s.skips))
		for _, sk := range s.skips {
			mark := ""
			if e, ok := match(exp, sk.testKey); ok {
				mark = "  [expected: " + e.reason + "]"
			} else {
				unexpected = append(unexpected, sk)
				if ci {
					mark = "  [NOT EXPECTED on this machine]"
				}
			}
			fmt.Fprintf(s.w, "  %s %s%s\n      %s\n", sk.pkg, sk.test, mark, sk.reason)
		}
	}
	if s.failed > 0 {
		fmt.Fprintf(s.w, "\nFailed (%d):\n", s.failed)
		for _, k := range s.failedTests {
			fmt.Fprintf(s.w, "  %s %s\n", k.pkg, k.test)
		}
		for _, p := range s.failedPackages {
			fmt.Fprintf(s.w, "  %s (the package failed: build, panic or timeout; see above)\n", p)
		}
	}
	if len(s.unfinished) > 0 {
		fmt.Fprintf(s.w, "\nDid not finish, stopped by the interrupt (%d):\n", len(s.unfinished))
		for _, k := range s.unfinished {
			if k.test == "" {
				fmt.Fprintf(s.w, "  %s (the package)\n", k.pkg)
			} else {
				fmt.Fprintf(s.w, "  %s %s\n", k.pkg, k.test)
			}
		}
	}
	code := 0
	if s.failed > 0 || s.interrupted {
		code = 1
	}
	if ci && len(unexpected) > 0 {
		fmt.Fprintf(s.w, "\n%d skip(s) not listed as expected on this machine: under CI every test must run (or be listed with its reason in the expected-skips file)\n", len(unexpected))
		code = 1
	}
	s.reportSlowest()
	if s.interrupted {
		fmt.Fprintf(s.w, "\nINTERRUPTED: %d passed, %d failed, %d skipped, %d did not finish (packages not yet started are not counted; an interrupted run is no result)\n",
			s.passed, s.failed, len(s.skips), len(s.unfinished))
		return code
	}
	fmt.Fprintf(s.w, "\n%d passed, %d failed, %d skipped\n", s.passed, s.failed, len(s.skips))
	return code
}

// reportSlowest lists the s.slowest slowest packages and top-level tests.
func (s *summary) reportSlowest() {
	if s.slowest <= 0 {
		return
	}
	sorted := slices.Clone(s.timings)
	slices.SortStableFunc(sorted, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	for _, kind := range []struct {
		title    string
		packages bool
	}{{"packages", true}, {"top-level tests", false}} {
		fmt.Fprintf(s.w, "\nSlowest %s:\n", kind.title)
		n := 0
		for _, t := range sorted {
			if (t.test == "") != kind.packages {
				continue
			}
			if n++; n > s.slowest {
				break
			}
			fmt.Fprintf(s.w, "  %7.2fs  %s\n", t.elapsed, strings.TrimSpace(t.pkg+" "+t.test))
		}
	}
}

type machine struct {
	goos string
	root bool
}

type expectedSkip struct {
	pkg, test, reason string
}

func parseExpected(data string, m machine) ([]expectedSkip, error) {
	var out []expectedSkip
	for n, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: want WHEN PACKAGE TEST REASON", n+1)
		}
		if _, err := path.Match(f[2], ""); err != nil {
			return nil, fmt.Errorf("line %d: test pattern %q: %w", n+1, f[2], err)
		}
		if !m.holds(f[0]) {
			continue
		}
		out = append(out, expectedSkip{pkg: f[1], test: f[2], reason: strings.Join(f[3:], " ")})
	}
	return out, nil
}

func (m machine) holds(when string) bool {
	switch when {
	case "*":
		return true
	case "root":
		return m.root
	}
	for _, goos := range strings.Split(when, ",") {
		if goos == m.goos {
			return true
		}
	}
	return false
}

func match(exp []expectedSkip, k testKey) (expectedSkip, bool) {
	for _, e := range exp {
		if k.pkg != e.pkg && !strings.HasSuffix(k.pkg, "/"+e.pkg) {
			continue
		}
		if ok, _ := path.Match(e.test, k.test); ok {
			return e, true
		}
	}
	return expectedSkip{}, false
}
