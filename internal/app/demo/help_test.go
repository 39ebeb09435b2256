package demo

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestServerCommand(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  string
		want []string
	}{
		{"", []string{self, "example-server"}},
		{"/bin/server  --stdio", []string{"/bin/server", "--stdio"}},
	} {
		got, err := ServerCommand(func(k string) string {
			if k == EnvServer {
				return tc.env
			}
			return "unexpected"
		})
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q %v, want %q", tc.env, got, err, tc.want)
		}
	}
}

// TestStepList: one numbered item a step, continuation lines indented
// under the item's text, nothing after the last.
func TestStepList(t *testing.T) {
	list := StepList()
	if !strings.HasPrefix(list, "  1. snapshot the server's definitions (tools, prompts, resource templates,\n     instructions) and digest each one;\n  2. sign") {
		t.Fatalf("start of the list:\n%s", list)
	}
	items := 0
	for _, line := range strings.Split(list, "\n") {
		switch {
		case strings.HasPrefix(line, "     "):
		case strings.HasPrefix(line, "  ") && strings.Contains(line, ". "):
			items++
		default:
			t.Errorf("line %q is neither an item nor its continuation", line)
		}
	}
	if items != len(Steps) || strings.HasSuffix(list, "\n") {
		t.Errorf("%d items for %d steps:\n%s", items, len(Steps), list)
	}
}
