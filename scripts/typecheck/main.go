// Command typecheck type-checks packages and their tests for the GOOS and
// GOARCH of its environment, from source, without compiling anything:
// scripts/test.sh runs it for windows and darwin.
//
//	GOOS=windows GOARCH=amd64 go run ./scripts/typecheck ./... ./testdata/exampleserver
//
// Why not `GOOS=windows go vet ./...`: vet reads its dependencies' types from
// the compiler's export data, so it compiles every dependency, the standard
// library included, once more for each target system (about 5 minutes of a
// cold run on two cores). Here one `go list -deps -test` names the files the
// build would use, and every package is type-checked from source: the named
// packages, their tests and the third-party dependencies whole, the standard
// library (the toolchain's own, built on every port) and the copies of a
// package recompiled for another package's tests (checked as that package)
// without function bodies, since their declarations are all an importer
// sees. What it reports is what the compiler's type checker would (an
// identifier that does not exist on that system, such as syscall.Kill on
// windows; a field of another type; a file that a build constraint leaves
// without a declaration it uses; a language feature newer than the module's
// go line), and a function declared without a body in a package with no
// assembly to give it one. Not what only the compiler's back end decides:
// //go:linkname and //go:embed rules. The generated test main packages are
// not checked (go test writes them).
//
// It prints each error as FILE:LINE:COL: MESSAGE and exits 1 if there was
// one, 2 if the packages could not be listed.
//
// With -cache DIR (scripts/test.sh passes one in the user's cache) a check
// that passed leaves a stamp there named by a hash of what it read: this
// program, the toolchain, the system, and every package it checked, with
// the contents of its files (the standard library's are the toolchain's).
// A later run that would read the same finds the stamp and checks nothing:
// the sources it type-checks have not changed since they passed.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

// listed is what `go list -json` says of a package that typecheck reads.
type listed struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	ImportMap  map[string]string
	Imports    []string
	ForTest    string
	SFiles     []string
	Standard   bool
	DepOnly    bool
	Module     *struct{ GoVersion string }
	Error      *struct{ Err string }
}

func main() {
	cache := flag.String("cache", "", "`directory` of the stamps of checks that passed")
	flag.Parse()
	os.Exit(run(goCommand{}, newStdLib(), flag.Args(), *cache, os.Stdout, os.Stderr))
}

// goCommand is how the go command is run: in Dir (the current directory
// when empty) with Env added to this process's environment.
type goCommand struct {
	Dir string
	Env []string
}

func (g goCommand) command(args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = g.Dir
	cmd.Env = append(os.Environ(), g.Env...)
	return cmd
}

// run lists and checks the patterns; std holds the standard library's
// packages once checked, for every run of the process; cache, when not
// empty, is the directory of the stamps of checks that passed.
func run(g goCommand, std *stdLib, patterns []string, cache string, stdout, stderr io.Writer) int {
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	pkgs, err := g.list(patterns)
	if err != nil {
		fmt.Fprintln(stderr, "typecheck:", err)
		return 2
	}
	goos, goarch := g.env("GOOS"), g.env("GOARCH")
	roots := 0
	for _, p := range pkgs {
		if !p.DepOnly {
			roots++
		}
	}
	stamp := ""
	if cache != "" {
		key, err := sourcesKey(pkgs, goos+"/"+goarch)
		if err != nil {
			fmt.Fprintln(stderr, "typecheck:", err)
			return 2
		}
		stamp = filepath.Join(cache, key)
		if _, err := os.Stat(stamp); err == nil {
			fmt.Fprintf(stderr, "typecheck: %d packages and tests, %d dependencies: no error for %s/%s (the same sources passed before: %s)\n", roots, len(pkgs)-roots, goos, goarch, stamp)
			return 0
		}
	}
	// A file of a package with tests is checked twice (the package, and
	// its variant for the tests): its error is said once.
	errs := check(pkgs, goos+"/"+goarch, types.SizesFor("gc", goarch), std)
	slices.Sort(errs)
	errs = slices.Compact(errs)
	for _, e := range errs {
		fmt.Fprintln(stdout, e)
	}
	if len(errs) > 0 {
		noun := "errors"
		if len(errs) == 1 {
			noun = "error"
		}
		fmt.Fprintf(stderr, "typecheck: %d %s for %s/%s\n", len(errs), noun, goos, goarch)
		return 1
	}
	fmt.Fprintf(stderr, "typecheck: %d packages and tests, %d dependencies: no error for %s/%s\n", roots, len(pkgs)-roots, goos, goarch)
	if stamp != "" {
		if err := writeStamp(stamp); err != nil {
			fmt.Fprintln(stderr, "typecheck:", err) // the check passed; the next one runs again
		}
	}
	return 0
}

// sourcesKey is a hash of what a check of pkgs for system reads: this
// program, the toolchain's version, the system, and each package as
// listed, with the contents of its files (not the standard library's: the
// toolchain's version names them).
func sourcesKey(pkgs []*listed, system string) (string, error) {
	h := sha256.New()
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if err := hashFile(h, exe); err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s\x00%s\x00", runtime.Version(), system)
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for _, p := range pkgs {
		// The listing itself: names, files, imports and their mapping,
		// the errors go list reported. A directory under the current one
		// (the module's) is named relative to it: another clone of the
		// same sources has the same key.
		q := *p
		if rel, err := filepath.Rel(wd, q.Dir); err == nil && filepath.IsLocal(rel) {
			q.Dir = rel
		}
		if err := json.NewEncoder(h).Encode(&q); err != nil {
			return "", err
		}
		if p.Standard {
			continue
		}
		for _, f := range slices.Concat(p.GoFiles, p.SFiles) {
			if err := hashFile(h, filepath.Join(p.Dir, f)); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes the length and contents of file to h.
func hashFile(h io.Writer, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%d\x00", len(b))
	_, err = h.Write(b)
	return err
}

// writeStamp creates the empty stamp file, atomically.
func writeStamp(stamp string) error {
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(stamp, nil, atomicfile.Options{Overwrite: true})
}

// env is what the go command takes for name, so that a GOOS the caller
// did not set is the host's.
func (g goCommand) env(name string) string {
	out, err := g.command("env", name).Output()
	if err != nil {
		return runtime.GOOS
	}
	return strings.TrimSpace(string(out))
}

// list runs one `go list -deps -test` for the patterns: every package the
// build and the tests would compile, dependencies before what imports them.
func (g goCommand) list(patterns []string) ([]*listed, error) {
	args := append([]string{"list", "-e", "-deps", "-test",
		"-json=ImportPath,Name,Dir,GoFiles,ImportMap,Imports,ForTest,SFiles,Standard,DepOnly,Module,Error"}, patterns...)
	cmd := g.command(args...)
	// Cross builds are without cgo (the go command's default when GOOS or
	// GOARCH is not the host's); with cgo the files that use C types would
	// need cgo to generate them first.
	cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var pkgs []*listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(listed)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list: %w", err)
		}
		// The test main packages (pkg.test) are generated by go test.
		if p.Name == "main" && strings.HasSuffix(p.ImportPath, ".test") && p.ForTest == "" {
			continue
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// stdLib holds the packages of the standard library once type-checked,
// by system and import path, with the file set they were parsed into:
// the runs of a process (the rows of the tests) check each once per
// system, the command itself once.
type stdLib struct {
	fset *token.FileSet
	mu   sync.Mutex
	pkgs map[string]*stdPackage
}

// stdPackage is one package of a stdLib, checked once.
type stdPackage struct {
	once sync.Once
	tp   *types.Package
	err  error
}

func newStdLib() *stdLib {
	return &stdLib{fset: token.NewFileSet(), pkgs: map[string]*stdPackage{}}
}

// get returns the package of p (a package of the standard library, not
// one recompiled for a test) for the system, which check makes the first
// time: the key holds the system, the directory and the files, which a
// build constraint may change.
func (s *stdLib) get(system string, p *listed, check func() (*types.Package, error)) (*types.Package, error) {
	key := system + "\x00" + p.ImportPath + "\x00" + p.Dir + "\x00" + strings.Join(p.GoFiles, ",")
	s.mu.Lock()
	e := s.pkgs[key]
	if e == nil {
		e = &stdPackage{}
		s.pkgs[key] = e
	}
	s.mu.Unlock()
	e.once.Do(func() { e.tp, e.err = check() })
	return e.tp, e.err
}

// check type-checks pkgs, each once its imports are done, as many at once
// as there are CPUs. A dependency is checked without function bodies; a
// package of the standard library is taken from std when a run of the
// process checked it for the same system.
func check(pkgs []*listed, system string, sizes types.Sizes, std *stdLib) []string {
	fset := std.fset
	done := make(map[string]chan struct{}, len(pkgs))
	typed := make(map[string]*types.Package, len(pkgs))
	for _, p := range pkgs {
		done[p.ImportPath] = make(chan struct{})
	}
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	report := func(s string) {
		mu.Lock()
		errs = append(errs, s)
		mu.Unlock()
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, p := range pkgs {
		wg.Go(func() {
			defer close(done[p.ImportPath])
			resolve := func(path string) string {
				if m, ok := p.ImportMap[path]; ok {
					return m
				}
				return path
			}
			// A package go list could not load is said before waiting for
			// its imports: the packages of an import cycle would wait for
			// each other.
			if p.Error != nil {
				report(fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
				return
			}
			for _, imp := range p.Imports {
				if ch, ok := done[resolve(imp)]; ok {
					<-ch
				}
			}
			one := func() (*types.Package, error) {
				sem <- struct{}{}
				defer func() { <-sem }()
				return checkOne(fset, p, sizes, func(path string) (*types.Package, error) {
					if path == "unsafe" {
						return types.Unsafe, nil
					}
					mu.Lock()
					defer mu.Unlock()
					if t := typed[resolve(path)]; t != nil {
						return t, nil
					}
					return nil, fmt.Errorf("%s: not type-checked (an error above)", resolve(path))
				}, report)
			}
			var tp *types.Package
			var err error
			if p.Standard && p.ForTest == "" {
				tp, err = std.get(system, p, one)
			} else {
				tp, err = one()
			}
			if err != nil {
				report(err.Error())
				return
			}
			mu.Lock()
			typed[p.ImportPath] = tp
			mu.Unlock()
		})
	}
	wg.Wait()
	return errs
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// checkOne type-checks p and reports its errors; it returns the package,
// with whatever it has despite errors (so that what imports it is checked
// too), or an error if a file does not parse.
func checkOne(fset *token.FileSet, p *listed, sizes types.Sizes, imp importerFunc, report func(string)) (*types.Package, error) {
	if p.ImportPath == "unsafe" {
		return types.Unsafe, nil
	}
	declOnly := p.Standard || (p.DepOnly && p.ForTest != "")
	mode := parser.SkipObjectResolution | parser.ParseComments
	files := make([]*ast.File, 0, len(p.GoFiles))
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, p.Dir+string(os.PathSeparator)+name, nil, mode)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	conf := types.Config{
		Importer:         imp,
		Sizes:            sizes,
		IgnoreFuncBodies: declOnly,
		Error:            func(err error) { report(err.Error()) },
	}
	switch {
	case p.Module != nil && p.Module.GoVersion != "":
		conf.GoVersion = "go" + p.Module.GoVersion
	case p.Module != nil:
		conf.GoVersion = "go1.16" // what the go command compiles a module without a go line as
	}
	tp, _ := conf.Check(strings.TrimSuffix(p.ImportPath, " ["+p.ForTest+".test]"), fset, files, nil)
	if !declOnly && len(p.SFiles) == 0 {
		for _, f := range files {
			missingBodies(fset, f, report)
		}
	}
	return tp, nil
}

// missingBodies reports the functions of f declared without a body, which
// the compiler refuses unless assembly or a //go:linkname gives them one.
func missingBodies(fset *token.FileSet, f *ast.File, report func(string)) {
	for _, c := range f.Comments {
		for _, l := range c.List {
			if strings.HasPrefix(l.Text, "//go:linkname ") {
				return
			}
		}
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body == nil {
			report(fmt.Sprintf("%s: missing function body", fset.Position(fd.Name.Pos())))
		}
	}
}
