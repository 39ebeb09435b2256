// Command testrun runs the tests of packages as `go test -json` does, with
// the test binaries kept between runs: scripts/test.sh runs the race tests
// with it.
//
//	testrun -o DIR [-p N] [-short D] [-timeout D] [-times FILE] [-ready FILE] [build flags] packages... [-- packages...]
//
// `go test` links every test binary anew on every run, even when nothing
// changed (the build cache keeps compiled packages, not linked test
// binaries): 72 race-built test binaries, 44 s of CPU on two cores, every
// warm run (docs/PERFORMANCE.md). testrun builds them with `go test -c -o
// DIR/`, which links only a binary that is missing or out of date, then
// runs each binary in its package's directory, its output converted by
// the toolchain's test2json, with go test's arguments (-test.v=test2json, -test.paniconexit0,
// -test.timeout), at most N at a time, the packages that took longest on
// the last run first (-times), and beside them, one at a time, those that
// took less than -short (3 s): their time is mostly a race-built binary's
// start and the race detector's second of sleep at its exit. Its output is go test -json's: the build's
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
// The packages after "--" wait for the -ready file (scripts/test.sh writes
// it once the services those packages' tests need run, with the variables
// that say where they are): one queue, N binaries at a time, for both.
//
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
	flag.DurationVar(&o.short, "short", 3*time.Second, "a package that took less than `D` last time (-times) runs beside the long ones, one at a time")
	flag.StringVar(&o.times, "times", "", "`file` of each package's last run time: read to run the longest first, updated")
	flag.StringVar(&o.ready, "ready", "", "the packages after -- run once `file` exists; its KEY=VALUE lines are added to their environment")
	race := flag.Bool("race", false, "build with the race detector")
	ldflags := flag.String("ldflags", "", "go test -ldflags")
	flag.Parse()
	if o.dir == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: testrun -o DIR [-p N] [-timeout D] [-times FILE] [-ready FILE] [-race] [-ldflags F] packages... [-- packages...]")
		os.Exit(2)
	}
	if *race {
		o.buildFlags = append(o.buildFlags, "-race")
	}
	if *ldflags != "" {
		o.buildFlags = append(o.buildFlags, "-ldflags="+*ldflags)
	}
	o.patterns = flag.Args()
	if i := slices.Index(o.patterns, "--"); i >= 0 {
		o.patterns, o.later = o.patterns[:i], o.patterns[i+1:]
		if o.ready == "" && len(o.later) > 0 {
			fmt.Fprintln(os.Stderr, "testrun: packages after -- wait for -ready FILE, and there is none")
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, o, os.Stdout, os.Stderr))
}

type options struct {
	dir        string
	parallel   int
	timeout    time.Duration
	short      time.Duration
	times      string
	buildFlags []string
	patterns   []string // the packages to run at once
	later      []string // the packages to run once the ready file exists
	ready      string   // the ready file (-ready)
	test2json  string   // the toolchain's test2json
}

// pkg is a package whose tests run.
type pkg struct {
	importPath string
	dir        string // the package's source directory: the tests run there
	binary     string // its test binary, in the run's own directory
	last       float64
	later      bool // it waits for the ready file
	short      bool // it took less than -short last time
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
	if len(o.later) > 0 {
		later, err := list(ctx, o.later)
		if err != nil {
			fmt.Fprintln(stderr, "testrun:", err)
			return 2
		}
		for _, p := range later {
			p.later = true
		}
		pkgs = append(pkgs, later...)
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
		runDir, err = linkRun(o.dir, pkgs, failedBuild)
		return err
	})
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 2
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
	last := readTimes(o.times)
	for _, p := range runs {
		p.last = last[p.importPath]
		p.short = p.last > 0 && p.last < o.short.Seconds() // a package without a time is long
	}
	// Longest first: a package the times do not know yet counts as longest.
	slices.SortStableFunc(runs, func(a, b *pkg) int {
		ka, kb := a.last, b.last
		if ka == 0 {
			ka = 1e9
		}
		if kb == 0 {
			kb = 1e9
		}
		switch {
		case ka > kb:
			return -1
		case ka < kb:
			return 1
		}
		return 0
	})

	var (
		mu       sync.Mutex
		elapsed  = map[string]float64{}
		wg       sync.WaitGroup
		readyEnv []string // the ready file's lines, once it exists
		isReady  = o.ready == ""
	)
	// next takes the first package of runs that may run now and that take
	// accepts; nil when there is none (done when none is left at all).
	next := func(take func(q *pkg) bool) (p *pkg, env []string, done bool) {
		mu.Lock()
		defer mu.Unlock()
		if !isReady {
			if b, err := os.ReadFile(o.ready); err == nil {
				isReady = true
				for line := range strings.Lines(string(b)) {
					if line = strings.TrimRight(line, "\r\n"); strings.Contains(line, "=") {
						readyEnv = append(readyEnv, line)
					}
				}
			}
		}
		for i, q := range runs {
			if (!q.later || isReady) && take(q) {
				runs = slices.Delete(runs, i, i+1)
				if q.later {
					env = readyEnv
				}
				return q, env, false
			}
		}
		return nil, nil, len(runs) == 0
	}
	// laterLeft reports whether a long package waiting for the ready file
	// is left (called with mu held, from take).
	laterLeft := func() bool {
		return slices.ContainsFunc(runs, func(q *pkg) bool { return q.later && !q.short })
	}
	worker := func(take func(q *pkg) bool) {
		for ctx.Err() == nil {
			p, env, done := next(take)
			if done {
				return
			}
			if p == nil {
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			e, ok, err := runTests(ctx, o, p, env, out)
			mu.Lock()
			if err != nil {
				fmt.Fprintf(stderr, "testrun: %s: %v\n", p.importPath, err)
			}
			if !ok {
				code = 1
			}
			if e > 0 {
				elapsed[p.importPath] = e
			}
			mu.Unlock()
		}
	}
	// N workers for the long packages, the longest first; the first of
	// them keeps to the packages that wait for the ready file while one
	// is left, so that the longest of those (on the path that decides
	// when the run ends) starts as the services do, not once a long
	// package ends. One more for the short packages (under -short last
	// time), which spend most of their time starting and in the race
	// detector's second of sleep at exit, not on a core: they run beside
	// the long ones instead of N at a time at the end. A long worker takes
	// a short package when no long one is left. (More binaries at a time
	// cost more CPU in all: docs/TESTING.md.)
	for i := range max(o.parallel, 1) {
		wg.Go(func() {
			worker(func(q *pkg) bool {
				if i == 0 && laterLeft() {
					return q.later && !q.short
				}
				return !q.short || !slices.ContainsFunc(runs, func(r *pkg) bool { return !r.short })
			})
		})
	}
	wg.Go(func() { worker(func(q *pkg) bool { return q.short }) })
	wg.Wait()
	if ctx.Err() != nil {
		return 1
	}
	if o.times != "" {
		// Runs of other packages write the file too (scripts/test.sh runs
		// two at once): what it holds now, with this run's times.
		err := filelock.With(context.Background(), filepath.Join(o.dir, ".lock"), "another test run is building the test binaries", func() error {
			t := readTimes(o.times)
			for k, v := range elapsed {
				t[k] = v
			}
			return writeTimes(o.times, t)
		})
		if err != nil {
			fmt.Fprintln(stderr, "testrun:", err)
		}
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

// runTests runs p's test binary, with env added to this process's
// environment, its output converted by the
// toolchain's test2json, as go test does: the binary is this process's
// child (test2json's own way to run a command ignores SIGINT and SIGQUIT,
// and its children would inherit that), its output goes to test2json,
// and go test's closing lines follow it ("exit status 2" when it failed,
// then "ok" or "FAIL" with the package and the time). It copies the events
// to out and returns the package's elapsed time and whether it passed.
func runTests(ctx context.Context, o options, p *pkg, env []string, out *lineWriter) (float64, bool, error) {
	conv := exec.Command(o.test2json, "-t", "-p", p.importPath)
	conv.Stderr = os.Stderr
	convIn, err := conv.StdinPipe()
	if err != nil {
		return 0, false, err
	}
	convOut, err := conv.StdoutPipe()
	if err != nil {
		return 0, false, err
	}
	if err := conv.Start(); err != nil {
		return 0, false, err
	}
	events := make(chan string, 1)
	go func() { events <- copyHoldingLast(convOut, out) }()

	cmd := exec.CommandContext(ctx, p.binary, "-test.v=test2json", "-test.paniconexit0", "-test.timeout="+o.timeout.String())
	cmd.Dir = p.dir
	cmd.Env = append(slices.Concat(os.Environ(), env), "PWD="+p.dir) // as go test runs it
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
		return 0, false, fmt.Errorf("test2json: %w", err)
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
			return 0, false, nil
		}
		out.event(event{Time: time.Now(), Action: "fail", Package: p.importPath, Elapsed: ptr(took)})
		return took, false, nil
	}
	out.line(held)
	return took, last.Action == "pass", nil
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

// readTimes reads the -times file: package → seconds. A missing or broken
// file is no times (every package counts as long).
func readTimes(file string) map[string]float64 {
	t := map[string]float64{}
	if file == "" {
		return t
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return t
	}
	if json.Unmarshal(b, &t) != nil {
		return map[string]float64{}
	}
	return t
}

// writeTimes replaces the -times file atomically.
func writeTimes(file string, t map[string]float64) error {
	b, err := json.MarshalIndent(t, "", "\t")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}
