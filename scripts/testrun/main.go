// Command testrun runs the tests of packages as `go test -json` does, with
// the test binaries kept between runs: scripts/test.sh runs the race tests
// with it.
//
//	testrun -o DIR [-p N] [-timeout D] [-c] [build flags] packages...
//
// `go test` links every test binary anew on every run, even when nothing
// changed (the build cache keeps compiled packages, not linked test
// binaries): 72 race-built test binaries, 44 s of CPU on two cores, every
// warm run (docs/PERFORMANCE.md). testrun builds them with `go test -c -o
// DIR/`, which links only a binary that is missing or out of date, then
// runs each binary in its package's directory, its output converted by the
// toolchain's test2json, with go test's arguments (-test.v=test2json,
// -test.paniconexit0, -test.timeout), at most N at a time, in the order
// given (go test's). Its output is go test -json's: the build's
// events (build-output, build-fail, the packages with no test files), a
// failed build as a failed package, each package's events ending with its
// "ok" or "FAIL" line and its result.
//
// DIR is locked while the binaries are built, and the run uses hard links
// to them in a directory of its own (DIR/run-PID-*), so that another run's
// build, of other sources, cannot replace a binary under this one. A run
// removes its directory when it ends, and those that runs killed before
// their end left (older than 3 hours).
//
// With -c it only builds the binaries (a later run finds them up to date).
// The build flags it passes to `go test -c` are -race and -ldflags.
//
// It exits 1 when a package failed (its build, or a test), 2 when the
// packages could not be listed or built at all.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpsign/mcpsign/internal/filelock"
)

func main() {
	var o options
	flag.StringVar(&o.dir, "o", "", "`directory` the test binaries are kept in (required)")
	flag.IntVar(&o.parallel, "p", runtime.GOMAXPROCS(0), "run at most `N` test binaries at a time")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "each test binary's -test.timeout")
	flag.BoolVar(&o.buildOnly, "c", false, "only build the test binaries")
	race := flag.Bool("race", false, "build with the race detector")
	ldflags := flag.String("ldflags", "", "go test -ldflags")
	flag.Parse()
	if o.dir == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: testrun -o DIR [-p N] [-timeout D] [-c] [-race] [-ldflags F] packages...")
		os.Exit(2)
	}
	if *race {
		o.buildFlags = append(o.buildFlags, "-race")
	}
	if *ldflags != "" {
		o.buildFlags = append(o.buildFlags, "-ldflags="+*ldflags)
	}
	o.patterns = flag.Args()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, o, os.Stdout, os.Stderr))
}

type options struct {
	dir        string
	parallel   int
	timeout    time.Duration
	buildOnly  bool
	buildFlags []string
	patterns   []string
	test2json  string // the toolchain's test2json
}

// pkg is a package whose tests run.
type pkg struct {
	importPath string
	dir        string // the package's source directory: the tests run there
	binary     string // its test binary, in the run's own directory
}

// buildWait bounds the wait for another run's build of the same directory
// (a cold build takes minutes).
const buildWait = 30 * time.Minute

func run(ctx context.Context, o options, stdout, stderr io.Writer) int {
	out := &lineWriter{w: stdout}
	// `go tool -n` builds the tool when its build is not cached and names
	// it: each package's run then starts it directly, not through the go
	// command.
	t2j, err := exec.CommandContext(ctx, "go", "tool", "-n", "test2json").Output()
	if err != nil {
		fmt.Fprintln(stderr, "testrun: go tool -n test2json:", err)
		return 2
	}
	o.test2json = strings.TrimSpace(string(t2j))
	pkgs, err := list(ctx, o.patterns)
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 2
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 2
	}
	runDir := ""
	var failedBuild map[string]string // package -> the failed ImportPath that breaks its test binary
	buildCtx, cancel := context.WithTimeout(ctx, buildWait)
	defer cancel()
	err = filelock.With(buildCtx, filepath.Join(o.dir, ".lock"), "another test run is building the test binaries", func() error {
		sweep(o.dir)
		failed, err := build(ctx, o, pkgs, out, stderr)
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			if failedBuild, err = affected(ctx, pkgs, failed); err != nil {
				return err
			}
		}
		if o.buildOnly {
			return nil
		}
		runDir, err = linkRun(o.dir, pkgs, failedBuild)
		return err
	})
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 2
	}
	if o.buildOnly {
		if len(failedBuild) > 0 {
			return 1
		}
		return 0
	}
	defer os.RemoveAll(runDir)

	code := 0
	var runs []*pkg
	for _, p := range pkgs {
		if p.binary == "" {
			continue // no test files: go test -c said so
		}
		if fb, ok := failedBuild[p.importPath]; ok {
			code = 1
			buildFailed(out, p.importPath, fb)
			continue
		}
		p.binary = filepath.Join(runDir, p.binary)
		runs = append(runs, p)
	}
	var (
		mu   sync.Mutex
		next = 0
		wg   sync.WaitGroup
	)
	for range max(o.parallel, 1) {
		wg.Go(func() {
			for {
				mu.Lock()
				if next == len(runs) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				p := runs[next]
				next++
				mu.Unlock()
				ok, err := runTests(ctx, o, p, out)
				mu.Lock()
				if err != nil {
					fmt.Fprintf(stderr, "testrun: %s: %v\n", p.importPath, err)
				}
				if !ok {
					code = 1
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return 1
	}
	return code
}

// list resolves the patterns to packages with `go list`: their directories
// and whether they have tests.
func list(ctx context.Context, patterns []string) ([]*pkg, error) {
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{if or .TestGoFiles .XTestGoFiles}}1{{end}}"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []*pkg
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		p := &pkg{importPath: f[0], dir: f[1]}
		if f[2] == "1" {
			p.binary = path(f[0]) + ".test"
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// path is the last element of an import path: go test -c names a test
// binary after it.
func path(importPath string) string {
	return importPath[strings.LastIndexByte(importPath, '/')+1:]
}

// build runs `go test -c -json -o DIR/` for the packages, copying its
// events to out, and returns the ImportPath of each build-fail event.
func build(ctx context.Context, o options, pkgs []*pkg, out *lineWriter, stderr io.Writer) ([]string, error) {
	args := append([]string{"test", "-c", "-json", "-o", o.dir + string(filepath.Separator)}, o.buildFlags...)
	for _, p := range pkgs {
		args = append(args, p.importPath)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = stderr
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var failed []string
	br := bufio.NewReader(r)
	for {
		line, rerr := br.ReadString('\n')
		if line != "" {
			var e struct{ Action, ImportPath string }
			if json.Unmarshal([]byte(line), &e) == nil && e.Action == "build-fail" {
				failed = append(failed, e.ImportPath)
			}
			out.line(line)
		}
		if rerr != nil {
			break
		}
	}
	werr := cmd.Wait()
	if werr != nil && len(failed) == 0 {
		return nil, fmt.Errorf("go test -c: %w", werr)
	}
	return failed, nil
}

// affected maps each package whose test binary depends on a package that
// failed to build to the first such failure (a build-fail event's
// ImportPath: "P [P.test]", "P_test [P.test]", "P.test", or a dependency
// "Q"). `go test -c` leaves the binary of a previous build where a build
// failed: such a binary is never run.
func affected(ctx context.Context, pkgs []*pkg, failed []string) (map[string]string, error) {
	args := []string{"list", "-e", "-test", "-f", "{{.ImportPath}}\t{{.ForTest}}\t{{join .Deps \"\\x1f\"}}"}
	for _, p := range pkgs {
		args = append(args, p.importPath)
	}
	b, err := exec.CommandContext(ctx, "go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -test (after a failed build): %w", err)
	}
	// A test main's Deps name a failed ImportPath as the event does ("P
	// [P.test]", "Q"); they are joined with a byte no import path holds.
	res := map[string]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 3 || !strings.HasSuffix(f[0], ".test") || f[1] != "" {
			continue // not a test main
		}
		p := strings.TrimSuffix(f[0], ".test")
		deps := append(strings.Split(f[2], "\x1f"), f[0])
		for _, fb := range failed {
			if slices.Contains(deps, fb) {
				res[p] = fb
				break
			}
		}
	}
	// A failure go list cannot place fails every package: the build said
	// it failed, and no binary of it is trusted.
	for _, fb := range failed {
		placed := false
		for _, v := range res {
			placed = placed || v == fb
		}
		if !placed {
			for _, p := range pkgs {
				if _, ok := res[p.importPath]; !ok {
					res[p.importPath] = fb
				}
			}
		}
	}
	return res, nil
}

// buildFailed writes what go test -json writes for a package whose test
// binary did not build.
func buildFailed(out *lineWriter, importPath, failedBuild string) {
	now := time.Now()
	out.event(event{Time: now, Action: "start", Package: importPath})
	out.event(event{Time: now, Action: "output", Package: importPath, Output: "FAIL\t" + importPath + " [build failed]\n"})
	out.event(event{Time: now, Action: "fail", Package: importPath, Elapsed: ptr(0.0), FailedBuild: failedBuild})
}

// linkRun makes the run's own directory in dir, with a hard link to each
// test binary to run.
func linkRun(dir string, pkgs []*pkg, failedBuild map[string]string) (string, error) {
	runDir, err := os.MkdirTemp(dir, "run-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	for _, p := range pkgs {
		if _, failed := failedBuild[p.importPath]; p.binary == "" || failed {
			continue
		}
		if err := os.Link(filepath.Join(dir, p.binary), filepath.Join(runDir, p.binary)); err != nil {
			os.RemoveAll(runDir)
			return "", fmt.Errorf("the test binary of %s: %w", p.importPath, err)
		}
	}
	return runDir, nil
}

// staleRun is when a run's directory is left by a run that is gone: no
// run lasts that long (scripts/test.sh gives each test binary 30 minutes,
// a cold run of it takes about 20), and a killed run cannot remove its own.
const staleRun = 3 * time.Hour

// sweep removes the directories of runs older than staleRun.
func sweep(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "run-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleRun {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// runTests runs p's test binary with its output converted by the
// toolchain's test2json, as go test does: the binary is this process's
// child (test2json's own way to run a command ignores SIGINT and SIGQUIT,
// and its children would inherit that), its output goes to test2json,
// and go test's closing lines follow it ("exit status 2" when it failed,
// then "ok" or "FAIL" with the package and the time). It copies the events
// to out and returns whether the package passed.
func runTests(ctx context.Context, o options, p *pkg, out *lineWriter) (bool, error) {
	conv := exec.Command(o.test2json, "-t", "-p", p.importPath)
	conv.Stderr = os.Stderr
	convIn, err := conv.StdinPipe()
	if err != nil {
		return false, err
	}
	convOut, err := conv.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := conv.Start(); err != nil {
		return false, err
	}
	events := make(chan string, 1)
	go func() { events <- copyHoldingLast(convOut, out) }()

	cmd := exec.CommandContext(ctx, p.binary, "-test.v=test2json", "-test.paniconexit0", "-test.timeout="+o.timeout.String())
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "PWD="+p.dir) // as go test runs it
	cmd.Stdout, cmd.Stderr = convIn, convIn
	// A signal reaches the whole process group; the context's kill is
	// for a test binary that outlived it.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	// A process the tests started and left holding the output: go test
	// waits as long (its WaitDelay) before it stops reading.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	werr := cmd.Run()
	took := time.Since(start).Seconds()
	if werr != nil {
		fmt.Fprintf(convIn, "%v\nFAIL\t%s\t%.3fs\n", werr, p.importPath, took)
	} else {
		fmt.Fprintf(convIn, "ok  \t%s\t%.3fs\n", p.importPath, took)
	}
	convIn.Close()
	held := <-events
	if err := conv.Wait(); err != nil && ctx.Err() == nil {
		return false, fmt.Errorf("test2json: %w", err)
	}
	var last event
	if held == "" || json.Unmarshal([]byte(held), &last) != nil || last.Test != "" || last.Elapsed == nil ||
		(last.Action != "pass" && last.Action != "fail") {
		// No closing event: the binary printed neither PASS nor FAIL.
		if held != "" {
			out.line(held)
		}
		if ctx.Err() != nil {
			// Interrupted: no result, as go test gives none when it is
			// stopped (scripts/testsummary counts the package's tests
			// as not finished).
			return false, nil
		}
		out.event(event{Time: time.Now(), Action: "fail", Package: p.importPath, Elapsed: ptr(took)})
		return false, nil
	}
	out.line(held)
	return last.Action == "pass", nil
}

// copyHoldingLast copies the lines of r to out, one line behind, and
// returns the last line (test2json's closing event) uncopied.
func copyHoldingLast(r io.Reader, out *lineWriter) string {
	br := bufio.NewReaderSize(r, 1<<16)
	held := ""
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if held != "" {
				out.line(held)
			}
			held = line
		}
		if err != nil {
			return held
		}
	}
}

// event is a test2json event, as go test -json writes it.
type event struct {
	Time        time.Time `json:",omitzero"`
	Action      string
	Package     string   `json:",omitempty"`
	Test        string   `json:",omitempty"`
	Elapsed     *float64 `json:",omitempty"`
	Output      string   `json:",omitempty"`
	FailedBuild string   `json:",omitempty"`
}

func ptr[T any](v T) *T { return &v }

// lineWriter writes whole lines, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(s string) {
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, s)
}

func (l *lineWriter) event(e event) {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // an event always marshals
	}
	l.line(string(b) + "\n")
}
