package audit

import (
	"strings"
	"testing"
)

func TestSummaryAndRepairedText(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  func(*strings.Builder) error
		want string
	}{
		{"summary", func(b *strings.Builder) error {
			return Summary{Events: 3, Head: "sha256:ab"}.WriteText(b, "a\x1b.jsonl", 0)
		},
			"audit log a\\u{1B}.jsonl: 3 event(s), the chain verifies\nhead: sha256:ab\n"},
		{"anchors", func(b *strings.Builder) error { return Summary{Events: 1, Head: "h"}.WriteText(b, "a", 2) },
			"audit log a: 1 event(s), the chain verifies and reaches 2 anchor(s)\nhead: h\n"},
		{"whole", func(b *strings.Builder) error { return Repaired{}.WriteText(b, "a") }, "audit log a is whole: nothing to repair\n"},
		{"cut", func(b *strings.Builder) error { return Repaired{Cut: 7}.WriteText(b, "a") }, "audit log a: cut a partial last line (7 bytes)\n"},
		{"newline", func(b *strings.Builder) error { return Repaired{Newline: true}.WriteText(b, "a") },
			"audit log a: its last event had lost its newline; the newline was written back, nothing cut\n"},
	} {
		var b strings.Builder
		if err := tc.out(&b); err != nil || b.String() != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, b.String(), err, tc.want)
		}
	}
}
