// Package textout holds what mcpsign's text report writers share (package
// pin's drift report, package pin/diff's diff, the CLI): a writer that keeps the
// first error, plurals, server names and diff lines escaped with
// internal/textsafe.
package textout

import (
	"fmt"
	"io"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Writer keeps the first write error of W so that a report writer stays
// readable: after an error it writes nothing more.
type Writer struct {
	w   io.Writer
	err error
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p unless an earlier write failed.
func (e *Writer) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	var n int
	n, e.err = e.w.Write(p)
	return n, e.err
}

// Printf formats and writes unless an earlier write failed.
func (e *Writer) Printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// Err returns the first write error.
func (e *Writer) Err() error { return e.err }

// Plural returns "1 error", "2 errors".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ServerName names a server for people, escaped: "notes 1.2.0", or
// "(unnamed server)". It is textsafe.Escape of ServerNameRaw.
func ServerName(serverName, version string) string {
	return textsafe.Escape(ServerNameRaw(serverName, version))
}

// ServerNameRaw is ServerName not escaped, for a writer that escapes
// otherwise where it prints (Markdown).
func ServerNameRaw(serverName, version string) string {
	name := serverName
	if name == "" {
		name = "(unnamed server)"
	}
	if version != "" {
		name += " " + version
	}
	return name
}

// DiffLines writes a unified diff, each line indented and escaped
// (textsafe.EscapeKeepLayout).
func DiffLines(e *Writer, diff, indent string) {
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		e.Printf("%s%s\n", indent, textsafe.EscapeKeepLayout(strings.TrimSuffix(line, "\n")))
	}
}
