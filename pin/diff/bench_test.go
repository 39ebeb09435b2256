package diff

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkTextDiff diffs two 20,000-line texts that differ in 200 lines.
func BenchmarkTextDiff(b *testing.B) {
	a, c := benchTexts()
	b.SetBytes(int64(len(a) + len(c)))
	b.ReportAllocs()
	for b.Loop() {
		Text(a, c, TextOptions{MaxBytes: 1 << 30})
	}
}

func benchTexts() (string, string) {
	var a, c strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&a, "line %d of the text, long enough to be realistic\n", i)
		if i%100 == 0 {
			fmt.Fprintf(&c, "line %d of the text, changed\n", i)
		} else {
			fmt.Fprintf(&c, "line %d of the text, long enough to be realistic\n", i)
		}
	}
	return a.String(), c.String()
}
