package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// TestCopyEscapedLines: a server's stderr is copied line by line, each
// line prefixed and escaped, a line longer than maxStderrLine in pieces;
// nothing is written for no text (not even the prefix).
func TestCopyEscapedLines(t *testing.T) {
	long := strings.Repeat("x", maxStderrLine)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a\nb\n", "p: a\np: b\n"},
		{"a\nno end", "p: a\np: no end"},
		{"\x1b[2Jcleared\n", "p: " + textsafe.EscapeKeepLayout("\x1b[2Jcleared\n")},
		{long + "y\n", "p: " + long + "p: y\n"},
	} {
		var b bytes.Buffer
		copyEscapedLines(&b, strings.NewReader(tc.in), "p: ")
		if b.String() != tc.want || strings.Contains(b.String(), "\x1b") {
			t.Errorf("%.40q: wrote %.80q, want %.80q", tc.in, b.String(), tc.want)
		}
	}
}
