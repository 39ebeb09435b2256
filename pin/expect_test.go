package pin

import (
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

func TestParseExpect(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("a", 64)
	e, err := ParseExpect([]string{"tools=" + d, "resources=" + digest.EmptySetDigest, "instructions=none"})
	if err != nil || e.Sets[digest.KindTool] != d || e.Sets[digest.KindResource] != digest.EmptySetDigest ||
		len(e.Sets) != 2 || e.Instructions == nil || *e.Instructions != "" {
		t.Fatalf("%+v %v", e, err)
	}
	if e, err := ParseExpect(nil); err != nil || len(e.Sets) != 0 || e.Instructions != nil {
		t.Errorf("nothing expected: %+v %v", e, err)
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"tools"}, `"tools": want SET=DIGEST`},
		{[]string{"tools=" + d, "tools=" + d}, "tools given twice"},
		{[]string{"instructions=" + d, "instructions=none"}, "instructions given twice"},
		{[]string{"instructions=sha256:ab"}, "(or none)"},
		{[]string{"tool=" + d}, "SET is one of"},
		{[]string{"prompts=none"}, "64 lowercase hex digits"},
		{[]string{"prompts=" + strings.ToUpper(d)}, "64 lowercase hex digits"},
	} {
		if _, err := ParseExpect(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseExpect: what ParseExpect accepts is what it reads, each digest
// valid, and what Change.Expect-style values it writes back read the same.
func FuzzParseExpect(f *testing.F) {
	f.Add("tools=sha256:"+strings.Repeat("0", 64), "instructions=none")
	f.Add("resources="+digest.EmptySetDigest, "prompts=x")
	f.Fuzz(func(t *testing.T, a, b string) {
		e, err := ParseExpect([]string{a, b})
		if err != nil {
			return
		}
		var again []string
		for k, d := range e.Sets {
			if !digest.ValidDigest(d) {
				t.Fatalf("%q %q: %s=%q", a, b, k, d)
			}
			again = append(again, k.ListMember()+"="+d)
		}
		if e.Instructions != nil {
			ins := *e.Instructions
			if ins == "" {
				ins = "none"
			}
			again = append(again, "instructions="+ins)
		}
		e2, err := ParseExpect(again)
		if err != nil || len(e2.Sets) != len(e.Sets) || (e2.Instructions == nil) != (e.Instructions == nil) {
			t.Fatalf("%q read back: %+v %v", again, e2, err)
		}
	})
}
