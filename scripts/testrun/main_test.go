package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// module writes a module example.com/m with the files (path → text) into a
// temporary directory.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	for name, text := range files {
		write(t, filepath.Join(dir, name), text)
	}
	return dir
}

func write(t *testing.T, file, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// results runs testrun in the module's directory and returns its exit
// code, each package's result (pass, fail, skip) and the packages' result
// lines, in the order they came.
func results(t *testing.T, mod string, o options) (int, map[string]string, []string) {
	t.Helper()
	t.Chdir(mod)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), o, &stdout, &stderr)
	res := map[string]string{}
	var lines []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var e struct {
			Action, Package, Test, Output string
			Elapsed                       *float64
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not an event: %q", sc.Text())
		}
		if e.Test == "" && e.Package != "" && e.Elapsed != nil {
			res[strings.TrimPrefix(e.Package, "example.com/m/")] = e.Action
		}
		if e.Action == "output" && e.Test == "" && (strings.HasPrefix(e.Output, "ok  \t") || strings.HasPrefix(e.Output, "FAIL\t")) {
			lines = append(lines, strings.Fields(e.Output)[1])
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr.String())
	}
	return code, res, lines
}

func testFile(pkg, body string) string {
	return "package " + pkg + "\n\nimport \"testing\"\n\n" + body + "\n"
}

// TestRun: what go test -json says of each kind of package (passing,
// failing, not building, depending on one that does not build, without
// tests), the exit code, and a second run that links nothing.
func TestRun(t *testing.T) {
	mod := module(t, map[string]string{
		"ok/ok.go":           "package ok\n\nvar X = 1\n",
		"ok/ok_test.go":      testFile("ok", "func TestOK(t *testing.T) {}"),
		"bad/bad_test.go":    testFile("bad", "func TestBad(t *testing.T) { t.Fatal(\"no\") }"),
		"dep/dep.go":         "package dep\n\nimport \"example.com/m/ok\"\n\nvar Y = ok.X\n",
		"dep/dep_test.go":    testFile("dep", "func TestDep(t *testing.T) { _ = Y }"),
		"notest/notest.go":   "package notest\n",
		"wd/wd_test.go":      testFile("wd", "import \"os\"\n\nfunc TestWd(t *testing.T) {\n\tif _, err := os.Stat(\"wd_test.go\"); err != nil {\n\t\tt.Fatal(err)\n\t}\n}"),
		"broken/broken.go":   "package broken\n",
		"broken/b_test.go":   testFile("broken", "func TestB(t *testing.T) { undefined() }"),
		"panics/p_test.go":   testFile("panics", "func TestP(t *testing.T) { panic(\"boom\") }"),
		"exits/exit_test.go": testFile("exits", "import \"os\"\n\nfunc TestExit(t *testing.T) { os.Exit(0) }"),
		// A test binary gets the signals go test leaves it: a test of
		// Ctrl-C handling (scripts/testsummary's) needs SIGINT.
		"sig/sig_test.go": testFile("sig", "import (\n\t\"os\"\n\t\"os/signal\"\n)\n\nfunc TestSig(t *testing.T) {\n\tif signal.Ignored(os.Interrupt) {\n\t\tt.Fatal(\"SIGINT is ignored\")\n\t}\n}"),
	})
	bin := t.TempDir()
	o := options{dir: bin, parallel: 2, timeout: time.Minute, patterns: []string{"./..."}}
	code, res, _ := results(t, mod, o)
	want := map[string]string{"ok": "pass", "bad": "fail", "dep": "pass", "notest": "skip", "wd": "pass", "broken": "fail", "panics": "fail", "exits": "fail", "sig": "pass"}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for p, w := range want {
		if res[p] != w {
			t.Errorf("%s: %q, want %q", p, res[p], w)
		}
	}
	// The second run finds every binary up to date: the same file, not
	// linked again.
	stat := func() os.FileInfo {
		fi, err := os.Stat(filepath.Join(bin, "ok.test"))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	before := stat()
	if code, res2, _ := results(t, mod, o); code != 1 || res2["ok"] != "pass" {
		t.Errorf("second run: exit %d, %v", code, res2)
	}
	if !os.SameFile(before, stat()) {
		t.Error("ok.test was linked again (another file)")
	}
	if runs, _ := filepath.Glob(filepath.Join(bin, "run-*")); len(runs) != 0 {
		t.Errorf("run directories left: %v", runs)
	}
}

// TestStaleBinaryNotRun: when a package's dependency stops building, go
// test -c leaves the package's old binary in place; it is reported as a
// failed build, never run.
func TestStaleBinaryNotRun(t *testing.T) {
	mod := module(t, map[string]string{
		"lib/lib.go":        "package lib\n\nvar X = 1\n",
		"user/user.go":      "package user\n\nimport \"example.com/m/lib\"\n\nvar Y = lib.X\n",
		"user/user_test.go": testFile("user", "func TestUser(t *testing.T) { _ = Y }"),
		"other/o_test.go":   testFile("other", "func TestOther(t *testing.T) {}"),
	})
	bin := t.TempDir()
	o := options{dir: bin, parallel: 2, timeout: time.Minute, patterns: []string{"./..."}}
	if code, res, _ := results(t, mod, o); code != 0 || res["user"] != "pass" || res["other"] != "pass" {
		t.Fatalf("first run: exit %d, %v", code, res)
	}
	write(t, filepath.Join(mod, "lib/lib.go"), "package lib\n\nvar X = undefined\n")
	code, res, _ := results(t, mod, o)
	if code != 1 || res["user"] != "fail" || res["other"] != "pass" {
		t.Fatalf("after lib broke: exit %d, %v; want 1, user fail (its stale binary not run), other pass", code, res)
	}
}
