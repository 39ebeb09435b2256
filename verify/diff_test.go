package verify

import (
	"fmt"
	"strings"
	"testing"
)

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
}
