package proxy

import (
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
)

// TestDecisionReportText: a decision's text is its drift report, a blank
// line, then its own report, escaped line by line; either alone without
// the blank line; each line ended.
func TestDecisionReportText(t *testing.T) {
	var drift strings.Builder
	if err := pin.WriteReportText(&drift, &pin.Report{}); err != nil {
		t.Fatal(err)
	}
	driftText := strings.TrimRight(drift.String(), "\n")
	for _, tc := range []struct {
		name string
		d    Decision
		want string
	}{
		{"nothing", Decision{}, ""},
		{"a report", Decision{Report: "why\n\x1b[31mred"}, "why\n" + textsafe.Escape("\x1b[31mred") + "\n"},
		{"drift alone", Decision{Drift: &pin.Report{}}, driftText + "\n"},
		{"drift and a report", Decision{Drift: &pin.Report{}, Report: "why\n"}, driftText + "\n\nwhy\n"},
	} {
		if got := tc.d.ReportText(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
