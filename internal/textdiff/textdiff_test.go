package textdiff

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// applyDiff applies a unified diff made by Unified to a and returns the
// result, checking every context and removed line and every hunk header.
func applyDiff(a, diff string) (string, error) {
	src := splitLines(a)
	var out []string
	pos := 0 // next line of src to copy
	header := regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)
	lines := splitLines(strings.TrimSuffix(diff, "\n"))
	for i := 0; i < len(lines); {
		m := header.FindStringSubmatch(lines[i])
		if m == nil {
			return "", fmt.Errorf("line %d: not a hunk header: %q", i, lines[i])
		}
		i++
		count := func(s string) int {
			if s == "" {
				return 1
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		aStart, aCount, bStart, bCount := count(m[1]), count(m[2]), count(m[3]), count(m[4])
		if m[2] == "" {
			aStart, _ = strconv.Atoi(m[1])
		}
		if m[4] == "" {
			bStart, _ = strconv.Atoi(m[3])
		}
		first := aStart - 1
		if aCount == 0 {
			first = aStart
		}
		if first < pos || first > len(src) {
			return "", fmt.Errorf("hunk %q starts at %d, before %d or past the end", lines[i-1], first, pos)
		}
		out = append(out, src[pos:first]...)
		pos = first
		wantB := bStart - 1
		if bCount == 0 {
			wantB = bStart
		}
		if len(out) != wantB {
			return "", fmt.Errorf("hunk %q: output is at line %d, header says %d", lines[i-1], len(out), wantB)
		}
		var na, nb int
		for i < len(lines) && !strings.HasPrefix(lines[i], "@@ ") {
			l := lines[i]
			if l == "" {
				return "", fmt.Errorf("empty diff line %d", i)
			}
			body := l[1:]
			switch l[0] {
			case ' ', '-':
				if pos >= len(src) || src[pos] != body {
					return "", fmt.Errorf("line %d %q does not match source line %d", i, l, pos)
				}
				pos++
				na++
				if l[0] == ' ' {
					out = append(out, body)
					nb++
				}
			case '+':
				out = append(out, body)
				nb++
			default:
				return "", fmt.Errorf("bad line %q", l)
			}
			i++
		}
		if na != aCount || nb != bCount {
			return "", fmt.Errorf("hunk counts %d,%d; header says %d,%d", na, nb, aCount, bCount)
		}
	}
	out = append(out, src[pos:]...)
	return strings.Join(out, "\n"), nil
}

func TestTextDiff(t *testing.T) {
	tests := []struct {
		name, a, b, want string
		opts             Options
	}{
		{"equal", "x\ny", "x\ny", "", Options{}},
		{"one line changed", "a", "b", "@@ -1 +1 @@\n-a\n+b\n", Options{}},
		{"added to empty", "", "a\nb", "@@ -0,0 +1,2 @@\n+a\n+b\n", Options{}},
		{"removed all", "a\nb", "", "@@ -1,2 +0,0 @@\n-a\n-b\n", Options{}},
		{"middle line with context", "1\n2\n3\n4\n5\n6\n7\n8\n9", "1\n2\n3\n4\nX\n6\n7\n8\n9",
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n", Options{}},
		{"two distant hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10", "X\n2\n3\n4\n5\n6\n7\n8\n9\nY",
			"@@ -1,2 +1,2 @@\n-1\n+X\n 2\n@@ -9,2 +9,2 @@\n 9\n-10\n+Y\n", Options{Context: 1}},
		{"close hunks merge", "1\n2\n3\n4\n5", "X\n2\n3\n4\nY",
			"@@ -1,5 +1,5 @@\n-1\n+X\n 2\n 3\n 4\n-5\n+Y\n", Options{Context: 2}},
		{"insertion without context", "a\nc", "a\nb\nc", "@@ -1,0 +2 @@\n+b\n", Options{Context: -1}},
		{"trailing newline", "a", "a\n", "@@ -1 +1,2 @@\n a\n+\n", Options{}},
		{"hidden characters stay raw", "safe", "safe\u200b\u202e!", "@@ -1 +1 @@\n-safe\n+safe\u200b\u202e!\n", Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, trunc := Unified(tc.a, tc.b, tc.opts)
			if got != tc.want || trunc {
				t.Errorf("TextDiff = %q (truncated %v), want %q", got, trunc, tc.want)
			}
			if back, err := applyDiff(tc.a, got); err != nil || back != tc.b {
				t.Errorf("applying the diff: %q, %v", back, err)
			}
		})
	}
}

// The diff is minimal: a Myers script has exactly the edit distance of an
// LCS computed the slow way.
func TestTextDiffMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		a, b := randomLines(r), randomLines(r)
		ops := diffLines(splitLines(a), splitLines(b), Options{}.WithDefaults())
		edits := 0
		for _, op := range ops {
			if op.kind != opEqual {
				edits++
			}
		}
		la, lb := splitLines(a), splitLines(b)
		if want := len(la) + len(lb) - 2*lcs(la, lb); edits != want {
			t.Fatalf("%q → %q: %d edits, the minimum is %d", a, b, edits, want)
		}
		d, _ := Unified(a, b, Options{})
		if back, err := applyDiff(a, d); err != nil || back != b {
			t.Fatalf("%q → %q: diff %q applies to %q, %v", a, b, d, back, err)
		}
	}
}

func randomLines(r *rand.Rand) string {
	n := r.IntN(12)
	lines := make([]string, n)
	for i := range lines {
		lines[i] = string(rune('a' + r.IntN(4)))
	}
	return strings.Join(lines, "\n")
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestTextDiffBounds(t *testing.T) {
	var a, b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&a, "line %d\n", i)
		fmt.Fprintf(&b, "line %d\n", i*7%5000)
	}
	// Past MaxEdits the middle is replaced whole: still a correct diff.
	d, trunc := Unified(a.String(), b.String(), Options{MaxEdits: 10, MaxBytes: 1 << 30})
	if trunc {
		t.Fatal("truncated")
	}
	if back, err := applyDiff(a.String(), d); err != nil || back != b.String() {
		t.Fatalf("fallback diff does not apply: %v", err)
	}
	// Past MaxLines too.
	d, _ = Unified(a.String(), b.String(), Options{MaxLines: 100, MaxBytes: 1 << 30})
	if back, err := applyDiff(a.String(), d); err != nil || back != b.String() {
		t.Fatalf("fallback diff does not apply: %v", err)
	}
	// MaxBytes cuts the output and says so.
	d, trunc = Unified(a.String(), b.String(), Options{MaxBytes: 1000})
	if !trunc || len(d) > 1000 {
		t.Errorf("MaxBytes 1000: %d bytes, truncated %v", len(d), trunc)
	}
	// One huge line is bounded by MaxBytes too.
	huge := strings.Repeat("x", 1<<20)
	if d, trunc := Unified(huge, huge+"y", Options{}); !trunc || len(d) > 64<<10 {
		t.Errorf("huge line: %d bytes, truncated %v", len(d), trunc)
	}
}

func FuzzTextDiff(f *testing.F) {
	f.Add("a\nb\nc", "a\nc\nd", 3)
	f.Add("", "x", 0)
	f.Add("x\n", "x", -1)
	f.Add("1\n2\n3\n4\n5\n6\n7\n8", "1\n2\nX\n4\n5\n6\nY\n8", 1)
	f.Add("safe", "safe\u200b\u202eevil", 3)
	f.Fuzz(func(t *testing.T, a, b string, context int) {
		if len(a) > 4096 || len(b) > 4096 {
			return
		}
		context = context % 8
		d, trunc := Unified(a, b, Options{Context: context, MaxEdits: 64})
		if trunc {
			t.Fatalf("a small diff was truncated")
		}
		if (d == "") != (a == b) {
			t.Fatalf("diff %q for a=%q b=%q", d, a, b)
		}
		back, err := applyDiff(a, d)
		if err != nil || back != b {
			t.Fatalf("a=%q b=%q diff=%q: applies to %q, %v", a, b, d, back, err)
		}
		// Bounded output never exceeds its cap.
		if d, _ := Unified(a, b, Options{MaxBytes: 100}); len(d) > 100 {
			t.Fatalf("MaxBytes 100: %d bytes", len(d))
		}
	})
}
