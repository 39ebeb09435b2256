package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The relay core's size bounds (issue 33: a core a reviewer can hold in
// their head): no file of proxy/ over maxFileLines lines, no function over
// maxFuncLines, so that a change that grows the core past them splits it
// instead.
const (
	maxFileLines = 600
	maxFuncLines = 80
)

func TestRelayCoreSize(t *testing.T) {
	files, err := filepath.Glob("../../../proxy/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("proxy/*.go: %v (%d files)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(name)
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("proxy/%s: %d lines, more than %d: split it by concern", base, n, maxFileLines)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("proxy/%s: func %s is %d lines, more than %d", base, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}
