package verify

import (
	"fmt"
	"strings"
)

// Bounds of the line diff: past them the changed region is shown as
// removed and re-added whole rather than searched for a shorter script.
const (
	maxDiffLines = 100_000 // lines per side
	maxDiffEdits = 1_000   // edit distance searched (Myers' D)
	diffContext  = 3
)

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
}

// unifiedDiff returns a unified diff (3 lines of context) from a to b, or
// "" when they are equal.
func unifiedDiff(nameA, nameB, a, b string) string {
	if a == b {
		return ""
	}
	la, lb := splitLines(a), splitLines(b)
	ops := diffLines(la, lb)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	// Group the script into hunks with context.
	type pos struct{ i, a, b int } // index in ops, line numbers in a and b
	ai, bi := 0, 0
	starts := make([]pos, len(ops)+1)
	for i, op := range ops {
		starts[i] = pos{i, ai, bi}
		switch op.kind {
		case ' ':
			ai++
			bi++
		case '-':
			ai++
		case '+':
			bi++
		}
	}
	starts[len(ops)] = pos{len(ops), ai, bi}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk from the first change, extended while changes are within
		// 2*context lines of each other.
		begin := max(i-diffContext, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*diffContext {
				break
			}
		}
		stop := min(end+diffContext, len(ops))
		s, e := starts[begin], starts[stop]
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(s.a, e.a-s.a), hunkRange(s.b, e.b-s.b))
		for _, op := range ops[begin:stop] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			out.WriteByte('\n')
		}
		i = stop
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffLines returns an edit script from a to b: the common prefix and
// suffix are kept, and the middle is diffed with Myers' algorithm, bounded.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		ops = append(ops, diffOp{' ', a[p]})
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	ops = append(ops, myers(a[p:len(a)-s], b[p:len(b)-s])...)
	for _, l := range a[len(a)-s:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// myers is Myers' O(ND) shortest edit script, giving up (whole replace)
// past maxDiffEdits or maxDiffLines.
func myers(a, b []string) []diffOp {
	n, m := len(a), len(b)
	replace := func() []diffOp {
		ops := make([]diffOp, 0, n+m)
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	if n == 0 || m == 0 || n > maxDiffLines || m > maxDiffLines {
		return replace()
	}
	maxD := min(n+m, maxDiffEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		// Keep the frontier this round starts from: diagonals -d-1..d+1.
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return replace()
	}
	// Backtrack through the saved frontiers.
	var rev []diffOp
	x, y := n, m
	for d := found; d > 0; d-- {
		vp := func(k int) int { return trace[d][k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && vp(k-1) < vp(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := vp(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, diffOp{' ', a[x]})
		}
		if x == px {
			y--
			rev = append(rev, diffOp{'+', b[y]})
		} else {
			x--
			rev = append(rev, diffOp{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffOp{' ', a[x]})
	}
	ops := make([]diffOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}
