package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testStd is the standard library the tests' runs share, each package
// type-checked once per system (as the command does in its one run),
// instead of once per row.
var testStd = newStdLib()

// TestRun type-checks small modules for another system: what does not
// exist there (in a package, in its tests, in its external tests) is
// reported with its place, and a module that builds there passes.
func TestRun(t *testing.T) {
	t.Parallel()
	const kill = "package p\n\nimport \"syscall\"\n\nfunc k() error { return syscall.Kill(1, syscall.SIGTERM) }\n"
	tests := []struct {
		name  string
		goos  string
		files map[string]string
		code  int
		want  []string // each in the output
	}{
		{
			name:  "clean",
			goos:  "windows",
			files: map[string]string{"p.go": "package p\n\nfunc F() int { return 1 }\n", "p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { _ = F() }\n"},
			code:  0,
			want:  []string{"no error for windows/amd64"},
		},
		{
			name:  "package",
			goos:  "windows",
			files: map[string]string{"p.go": kill},
			code:  1,
			want:  []string{"p.go:5:33: undefined: syscall.Kill", "1 error for windows/amd64"},
		},
		{
			name:  "builds on unix",
			goos:  "darwin",
			files: map[string]string{"p.go": kill},
			code:  0,
			want:  []string{"no error for darwin/amd64"},
		},
		{
			name: "test file",
			goos: "windows",
			files: map[string]string{
				"p.go":      "package p\n",
				"p_test.go": "package p\n\nimport (\n\t\"os/exec\"\n\t\"syscall\"\n)\n\nvar c = exec.Cmd{SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}\n",
			},
			code: 1,
			want: []string{"p_test.go:8:52: unknown field Setpgid"},
		},
		{
			name: "external test, reported once",
			goos: "windows",
			files: map[string]string{
				"p.go":      "package p\n",
				"x_test.go": "package p_test\n\nimport \"syscall\"\n\nvar _ = syscall.Getpgid\n",
			},
			code: 1,
			want: []string{"x_test.go:5:17: undefined: syscall.Getpgid", "1 error for windows/amd64"},
		},
		{
			name: "a build constraint leaves a declaration out",
			goos: "windows",
			files: map[string]string{
				"p.go":      "package p\n\nfunc F() { g() }\n",
				"g_unix.go": "//go:build unix\n\npackage p\n\nfunc g() {}\n",
			},
			code: 1,
			want: []string{"p.go:3:12: undefined: g"},
		},
		{
			name: "an import cycle through a test is an error, not a deadlock",
			goos: "windows",
			files: map[string]string{
				"p.go":        "package p\n",
				"p_test.go":   "package p\n\nimport _ \"example.com/p/q\"\n",
				"q/q.go":      "package q\n\nimport _ \"example.com/p\"\n",
				"q/q_test.go": "package q\n",
			},
			code: 1,
			want: []string{"import cycle not allowed"},
		},
		{
			name: "a dependency's function body",
			goos: "windows",
			files: map[string]string{
				"go.mod":     "module example.com/p\n\ngo 1.26\n\nrequire example.com/dep v0.0.0\n\nreplace example.com/dep => ./dep\n",
				"p.go":       "package p\n\nimport \"example.com/dep\"\n\nvar _ = dep.K\n",
				"dep/go.mod": "module example.com/dep\n\ngo 1.26\n",
				"dep/dep.go": "package dep\n\nimport \"syscall\"\n\nfunc K() error { return syscall.Kill(1, 9) }\n",
			},
			code: 1,
			want: []string{"dep.go:5:33: undefined: syscall.Kill"},
		},
		{
			name: "a dependency without a go line is go1.16",
			goos: "darwin",
			files: map[string]string{
				"go.mod":     "module example.com/p\n\ngo 1.26\n\nrequire example.com/dep v0.0.0\n\nreplace example.com/dep => ./dep\n",
				"p.go":       "package p\n\nimport \"example.com/dep\"\n\nvar _ = dep.N\n",
				"dep/go.mod": "module example.com/dep\n",
				"dep/dep.go": "package dep\n\nfunc N() (n int) {\n\tfor range 3 {\n\t\tn++\n\t}\n\treturn n\n}\n",
			},
			code: 1,
			want: []string{"requires go1.22"},
		},
		{
			name: "a function without a body",
			goos: "windows",
			files: map[string]string{
				"p.go":         "package p\n\nfunc F() { g() }\n",
				"g_windows.go": "package p\n\nfunc g()\n",
				"g_unix.go":    "//go:build unix\n\npackage p\n\nfunc g() {}\n",
			},
			code: 1,
			want: []string{"g_windows.go:3:6: missing function body"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if _, ok := tt.files["go.mod"]; !ok {
				tt.files["go.mod"] = "module example.com/p\n\ngo 1.26\n"
			}
			for name, text := range tt.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g := goCommand{Dir: dir, Env: []string{"GOOS=" + tt.goos, "GOARCH=amd64", "GOFLAGS="}}
			var stdout, stderr bytes.Buffer
			code := run(g, testStd, []string{"./..."}, "", &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tt.code {
				t.Fatalf("exit %d, want %d; output:\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestListError: a pattern that names no package is exit 2 with go list's
// words, not a pass.
func TestListError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/p\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run(goCommand{Dir: dir}, testStd, []string{"./nosuch"}, "", &stdout, &stderr); code == 0 {
		t.Fatalf("exit 0 for a pattern that matches nothing; output:\n%s%s", stdout.String(), stderr.String())
	}
}

// TestCache: a check that passed leaves a stamp, and the same sources
// again are not checked; a changed file, another system, or a check that
// failed is checked (and a failure leaves no stamp).
func TestCache(t *testing.T) {
	t.Parallel()
	dir, cache := t.TempDir(), t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/p\n\ngo 1.26\n")
	write("p.go", "package p\n\nfunc F() int { return 1 }\n")
	check := func(goos string, wantCode int, wantCached bool) {
		t.Helper()
		g := goCommand{Dir: dir, Env: []string{"GOOS=" + goos, "GOARCH=amd64", "GOFLAGS="}}
		var stdout, stderr bytes.Buffer
		code := run(g, testStd, []string{"./..."}, cache, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != wantCode {
			t.Fatalf("exit %d, want %d; output:\n%s", code, wantCode, out)
		}
		if cached := strings.Contains(out, "the same sources passed before"); cached != wantCached {
			t.Fatalf("cached %v, want %v; output:\n%s", cached, wantCached, out)
		}
	}
	check("windows", 0, false)
	check("windows", 0, true)
	check("darwin", 0, false)
	write("p.go", "package p\n\nfunc F() int { return 2 }\n")
	check("windows", 0, false)
	write("p.go", "package p\n\nimport \"syscall\"\n\nfunc F() error { return syscall.Kill(1, syscall.SIGTERM) }\n")
	check("windows", 1, false)
	check("windows", 1, false)
}

// TestCacheAnotherClone: the same sources in another directory (another
// clone) find the stamp their first check left.
func TestCacheAnotherClone(t *testing.T) {
	cache := t.TempDir()
	for i, wantCached := range []bool{false, true} {
		dir := t.TempDir()
		for name, text := range map[string]string{"go.mod": "module example.com/p\n\ngo 1.26\n", "p.go": "package p\n\nfunc F() int { return 1 }\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Chdir(dir) // the module's directory, as scripts/test.sh runs it
		var stdout, stderr bytes.Buffer
		code := run(goCommand{Env: []string{"GOOS=windows", "GOARCH=amd64", "GOFLAGS="}}, testStd, []string{"./..."}, cache, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if cached := strings.Contains(out, "the same sources passed before"); code != 0 || cached != wantCached {
			t.Fatalf("clone %d: exit %d, cached %v, want 0 and %v; output:\n%s", i+1, code, cached, wantCached, out)
		}
	}
}
