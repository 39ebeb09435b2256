package verify

import "github.com/mcpsign/mcpsign/internal/textdiff"

// unifiedDiff returns a unified diff (3 lines of context) from a to b with
// file headers, or "" when they are equal: the diff of internal/textdiff,
// mcpsign's one text diff.
func unifiedDiff(nameA, nameB, a, b string) string {
	d, _ := textdiff.Unified(a, b, textdiff.Options{})
	if d == "" {
		return ""
	}
	return "--- " + nameA + "\n+++ " + nameB + "\n" + d
}
