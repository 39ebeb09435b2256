package capability

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Names lists capabilities for people: "read, write".
func Names(cs []Capability) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = string(c)
	}
	return strings.Join(parts, ", ")
}

// SourcesText lists the reasons for a capability for people, separated by
// "; ", raw (a detail is a word of the server's text): for a message that
// the edge printing it escapes with internal/textsafe, once.
func SourcesText(ss []Source) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return strings.Join(parts, "; ")
}

// Describe lists a tool's capabilities with their sources, raw (as
// SourcesText): "read (name \"get\"), delete (annotation
// \"destructiveHint\")". Escape it where it is printed (WriteText does).
func Describe(t *Tool) string {
	parts := make([]string, len(t.Capabilities))
	for i, c := range t.Capabilities {
		parts[i] = fmt.Sprintf("%s (%s)", c, SourcesText(t.Sources[c]))
	}
	return strings.Join(parts, ", ")
}

// WriteText writes the capabilities of tools (by tool name, as
// (*pin.Lock).ToolCapabilities returns them) one tool a line in name order
// (UTF-8 byte order, a lock's order), with their sources, delete and exec
// marked "!": what an approver should read. Tool names are escaped.
func WriteText(w io.Writer, tools map[string]*Tool) error {
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		t := tools[name]
		mark := " "
		for _, c := range t.Capabilities {
			if c.Dangerous() {
				mark = "!"
			}
		}
		if _, err := fmt.Fprintf(w, "  %s %-24s %s\n", mark, textsafe.Escape(name), textsafe.Escape(Describe(t))); err != nil {
			return err
		}
	}
	return nil
}
