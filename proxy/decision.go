package proxy

import (
	"bytes"
	"io"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
)

// WriteReport writes d's explanation for people, every line after prefix:
// the check against the lock (Drift, by pin.WriteReportText, which escapes
// each server string it shows), then Report, escaped with
// internal/textsafe line by line. It is where a decision's text is printed
// (the block report, a notice on stderr): the text is escaped there once,
// never before (docs/PROXY.md).
func (d *Decision) WriteReport(w io.Writer, prefix string) error {
	var b bytes.Buffer
	if d.Drift != nil {
		if err := pin.WriteReportText(&b, d.Drift); err != nil {
			return err
		}
		if d.Report != "" {
			b.WriteString("\n")
		}
	}
	for _, line := range strings.Split(strings.TrimRight(d.Report, "\n"), "\n") {
		if line != "" {
			b.WriteString(textsafe.Escape(line))
		}
		b.WriteString("\n")
	}
	text := strings.TrimRight(b.String(), "\n")
	if text == "" {
		return nil
	}
	_, err := io.WriteString(w, indent(text, prefix))
	return err
}

// ReportText is WriteReport to a string, for a message that carries it
// whole (a test, a log line); "" when there is nothing to explain.
func (d *Decision) ReportText() string {
	var b strings.Builder
	_ = d.WriteReport(&b, "")
	return b.String()
}
