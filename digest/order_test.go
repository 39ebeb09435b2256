package digest

import (
	"slices"
	"testing"
)

func TestCompareKeys(t *testing.T) {
	type key struct {
		kind Kind
		key  string
	}
	in := []key{
		{KindResourceTemplate, "file:///{a}"}, {KindPrompt, "b"}, {KindTool, "é"}, {KindTool, "Z"},
		{KindTool, "a"}, {KindPrompt, "a"}, {KindTool, "a_b"},
	}
	want := []key{
		{KindTool, "Z"}, {KindTool, "a"}, {KindTool, "a_b"}, {KindTool, "é"},
		{KindPrompt, "a"}, {KindPrompt, "b"}, {KindResourceTemplate, "file:///{a}"},
	}
	slices.SortFunc(in, func(a, b key) int { return CompareKeys(a.kind, a.key, b.kind, b.key) })
	if !slices.Equal(in, want) {
		t.Errorf("sorted %v, want %v", in, want)
	}
	if c := CompareKeys(KindTool, "a", KindTool, "a"); c != 0 {
		t.Errorf("equal keys compare %d", c)
	}
}
