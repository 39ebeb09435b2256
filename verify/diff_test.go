package verify

import (
	"fmt"
	"strings"
	"testing"
)

// apply rebuilds both sides from an edit script.
func apply(ops []diffOp) (a, b []string) {
	for _, op := range ops {
		switch op.kind {
		case ' ':
			a, b = append(a, op.line), append(b, op.line)
		case '-':
			a = append(a, op.line)
		case '+':
			b = append(b, op.line)
		}
	}
	return a, b
}

func TestDiffLines(t *testing.T) {
	lines := func(s string) []string { return splitLines(strings.ReplaceAll(s, " ", "\n")) }
	for _, tc := range []struct {
		a, b  string
		edits int // expected number of - and + lines (minimal)
	}{
		{"a b c", "a b c", 0},
		{"a b c", "a x c", 2},
		{"a b c", "a b c d", 1},
		{"a b c", "b c", 1},
		{"", "a", 1},
		{"a", "", 1},
		{"a b c d e f", "a c e f g", 3},
		{"x a b c y", "x b c a y", 2},
	} {
		ops := diffLines(lines(tc.a), lines(tc.b))
		ga, gb := apply(ops)
		if strings.Join(ga, " ") != strings.Join(lines(tc.a), " ") || strings.Join(gb, " ") != strings.Join(lines(tc.b), " ") {
			t.Errorf("%q -> %q: script does not rebuild both sides: %v", tc.a, tc.b, ops)
		}
		n := 0
		for _, op := range ops {
			if op.kind != ' ' {
				n++
			}
		}
		if n != tc.edits {
			t.Errorf("%q -> %q: %d edits, want %d", tc.a, tc.b, n, tc.edits)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	var a, b []string
	for i := range 40 {
		a = append(a, fmt.Sprintf("line %d", i))
		b = append(b, fmt.Sprintf("line %d", i))
	}
	b[5] = "changed 5"
	b[30] = "changed 30"
	b = append(b[:20], b[21:]...)
	got := unifiedDiff("old", "new", strings.Join(a, "\n"), strings.Join(b, "\n"))
	want := `--- old
+++ new
@@ -3,7 +3,7 @@
 line 2
 line 3
 line 4
-line 5
+changed 5
 line 6
 line 7
 line 8
@@ -18,7 +18,6 @@
 line 17
 line 18
 line 19
-line 20
 line 21
 line 22
 line 23
@@ -28,7 +27,7 @@
 line 27
 line 28
 line 29
-line 30
+changed 30
 line 31
 line 32
 line 33
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if unifiedDiff("a", "b", "same\n", "same\n") != "" {
		t.Error("equal texts diff")
	}
	// Past the edit bound the change is shown whole, still correct.
	var x, y []string
	for i := range 3000 {
		x = append(x, fmt.Sprintf("x%d", i))
		y = append(y, fmt.Sprintf("y%d", i))
	}
	ops := diffLines(x, y)
	gx, gy := apply(ops)
	if len(gx) != 3000 || len(gy) != 3000 || gx[0] != "x0" || gy[2999] != "y2999" {
		t.Error("bounded diff does not rebuild both sides")
	}
}
