package pin

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestCheckMembersNamesFive: an error names at most five unknown members,
// sorted, then "…".
func TestCheckMembersNamesFive(t *testing.T) {
	members := func(n int) map[string]json.RawMessage {
		m := map[string]json.RawMessage{"ok": json.RawMessage(`1`)}
		for i := range n {
			m[fmt.Sprintf("x%d", i)] = json.RawMessage(`1`)
		}
		return m
	}
	for _, tt := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, `unknown member "x0"`},
		{5, `unknown member "x0", "x1", "x2", "x3", "x4"`},
		{6, `unknown member "x0", "x1", "x2", "x3", "x4", …`},
	} {
		err := checkMembers(members(tt.n), []string{"ok"}, []string{"ok"})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%d unknown: %q, want %q", tt.n, got, tt.want)
		}
	}
	if err := checkMembers(members(0), nil, []string{"gone"}); err == nil || err.Error() != `member "gone" is missing` {
		t.Errorf("missing member: %v", err)
	}
}

// TestSplitNotContainer: empty text, space only, or another value is
// neither an object nor an array, refused without reading past the end.
func TestSplitNotContainer(t *testing.T) {
	for _, in := range []string{"", "  ", "1", `"x"`} {
		if _, err := splitArray([]byte(in)); err == nil {
			t.Errorf("splitArray(%q) accepted", in)
		}
		if _, err := splitObject([]byte(in)); err == nil {
			t.Errorf("splitObject(%q) accepted", in)
		}
	}
	if got, err := splitArray([]byte(` [1, {"a":2}] `)); err != nil || len(got) != 2 || string(got[1]) != `{"a":2}` {
		t.Errorf("splitArray: %q, %v", got, err)
	}
}
