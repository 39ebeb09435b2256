// Package textdiff is mcpsign's one text diff: a bounded, line-based
// unified diff (Myers' algorithm, with caps on lines, edit distance and
// output), used for the diffs of definitions and instructions that pin,
// verify and hosts show.
package textdiff

import (
	"strconv"
	"strings"
)

// Options bound a text diff. The zero value takes the defaults.
type Options struct {
	// Context is the number of unchanged lines around each change; 0
	// means 3, and a negative value means none.
	Context int
	// MaxLines caps the lines of each side that are compared line by line
	// (after the common start and end are set aside); past it the middle
	// is shown as removed then added. 0 means 20000.
	MaxLines int
	// MaxEdits caps the edit distance searched for (Myers' D); past it the
	// middle is shown as removed then added. 0 means 1000.
	MaxEdits int
	// MaxBytes caps the output; the diff is cut at a line boundary past it
	// and reported truncated. 0 means 64 KiB.
	MaxBytes int
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	switch {
	case o.Context == 0:
		o.Context = 3
	case o.Context < 0:
		o.Context = 0
	}
	if o.MaxLines <= 0 {
		o.MaxLines = 20000
	}
	if o.MaxEdits <= 0 {
		o.MaxEdits = 1000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 10
	}
	return o
}

// Unified returns the line-based unified diff of a and b: hunks
// ("@@ -l,n +l,n @@") of context (" "), removed ("-") and added ("+")
// lines, without file headers; "" when a and b are equal. Lines are split at
// "\n" and kept raw: escape them before showing them. truncated reports that
// the output was cut at opts.MaxBytes.
func Unified(a, b string, opts Options) (diff string, truncated bool) {
	if a == b {
		return "", false
	}
	o := opts.WithDefaults()
	ops := diffLines(splitLines(a), splitLines(b), o)
	return formatUnified(ops, o)
}

// splitLines splits text at "\n"; the empty text has no lines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// opKind is one step of an edit script.
type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

type lineOp struct {
	kind opKind
	text string
}

// diffLines returns an edit script from a to b: the common start and end
// as they are, and the middle by Myers' algorithm when it is within bounds,
// else removed and added whole.
func diffLines(a, b []string, o Options) []lineOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]lineOp, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		ops = append(ops, lineOp{opEqual, l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb, o)
	if !ok {
		mid = mid[:0]
		for _, l := range ma {
			mid = append(mid, lineOp{opDelete, l})
		}
		for _, l := range mb {
			mid = append(mid, lineOp{opInsert, l})
		}
	}
	ops = append(ops, mid...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, lineOp{opEqual, l})
	}
	return ops
}

// myers computes a shortest edit script (E. Myers, "An O(ND) Difference
// Algorithm and Its Variations", 1986), keeping the frontier of every step
// for the backtrack: O((N+M)·D) time and O(D²) memory, both bounded by
// o.MaxLines and o.MaxEdits. ok is false past the bounds.
func myers(a, b []string, o Options) (ops []lineOp, ok bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		for _, l := range a {
			ops = append(ops, lineOp{opDelete, l})
		}
		for _, l := range b {
			ops = append(ops, lineOp{opInsert, l})
		}
		return ops, true
	}
	if n > o.MaxLines || m > o.MaxLines {
		return nil, false
	}
	// Compare line numbers, not strings.
	ids := map[string]int32{}
	id := func(s string) int32 {
		v, ok := ids[s]
		if !ok {
			v = int32(len(ids))
			ids[s] = v
		}
		return v
	}
	ai, bi := make([]int32, n), make([]int32, m)
	for i, l := range a {
		ai[i] = id(l)
	}
	for i, l := range b {
		bi[i] = id(l)
	}
	maxD := min(n+m, o.MaxEdits)
	off := maxD + 1
	v := make([]int32, 2*off+1)
	var trace [][]int32 // trace[d][k+d] = furthest x on diagonal k after step d
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int32
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - int32(k)
			for int(x) < n && int(y) < m && ai[x] == bi[y] {
				x++
				y++
			}
			v[off+k] = x
			if int(x) >= n && int(y) >= m {
				found = d
			}
		}
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
	}
	if found < 0 {
		return nil, false
	}
	// Backtrack from (n, m), collecting the script in reverse.
	x, y := int32(n), int32(m)
	for d := found; d > 0; d-- {
		prev := trace[d-1] // diagonals -(d-1)…d-1
		at := func(k int) int32 { return prev[k+d-1] }
		k := int(x - y)
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - int32(pk)
		for x > px && y > py {
			ops = append(ops, lineOp{opEqual, a[x-1]})
			x--
			y--
		}
		if x == px {
			ops = append(ops, lineOp{opInsert, b[y-1]})
			y--
		} else {
			ops = append(ops, lineOp{opDelete, a[x-1]})
			x--
		}
	}
	for x > 0 && y > 0 {
		ops = append(ops, lineOp{opEqual, a[x-1]})
		x--
		y--
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops, true
}

// formatUnified groups the edit script into hunks with o.Context lines of
// context and writes them, up to o.MaxBytes.
func formatUnified(ops []lineOp, o Options) (string, bool) {
	var b strings.Builder
	// Line numbers (from 1) of each op's position in a and b.
	ia, ib := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for i, op := range ops {
		ia[i+1], ib[i+1] = ia[i], ib[i]
		if op.kind != opInsert {
			ia[i+1]++
		}
		if op.kind != opDelete {
			ib[i+1]++
		}
	}
	i := 0
	for i < len(ops) {
		// Find the next change.
		for i < len(ops) && ops[i].kind == opEqual {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-o.Context)
		end := i
		// Extend while the next change is within 2·context lines.
		for end < len(ops) {
			if ops[end].kind != opEqual {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == opEqual {
				run++
			}
			if run == len(ops) || run-end > 2*o.Context {
				end = min(len(ops), end+o.Context)
				break
			}
			end = run
		}
		header := "@@ -" + hunkRange(ia[start], ia[end]-ia[start]) + " +" + hunkRange(ib[start], ib[end]-ib[start]) + " @@\n"
		if b.Len()+len(header) > o.MaxBytes {
			return b.String(), true
		}
		b.WriteString(header)
		for _, op := range ops[start:end] {
			if b.Len()+len(op.text)+2 > o.MaxBytes {
				return b.String(), true
			}
			b.WriteByte(byte(op.kind))
			b.WriteString(op.text)
			b.WriteByte('\n')
		}
		i = end
	}
	return b.String(), false
}

// hunkRange writes "start,count" as diff -u does: the start line is from 1,
// or the line before an empty range; ",1" is left out.
func hunkRange(before, count int) string {
	start := before + 1
	if count == 0 {
		start = before
	}
	if count == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}
