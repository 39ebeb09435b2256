package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestResponseLine: a response of the proxy's own echoes the request's id
// whatever its length (a client's id may be far longer than the answer's
// value: a capacity computed wrongly from the lengths panics) and is one
// line of strict JSON.
func TestResponseLine(t *testing.T) {
	t.Parallel()
	long := `"` + strings.Repeat("i", 300) + `"`
	for _, tc := range []struct {
		name, id, member, value string
	}{
		{"a number id", `7`, "result", `{}`},
		{"a long string id, a short result", long, "result", `{}`},
		{"a long string id, a short error", long, "error", `{"code":-1,"message":"x"}`},
		{"a short id, a long value", `"a"`, "result", `{"k":"` + strings.Repeat("v", 300) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := string(responseLine([]byte(tc.id), tc.member, []byte(tc.value)))
			want := `{"jsonrpc":"2.0","id":` + tc.id + `,"` + tc.member + `":` + tc.value + "}\n"
			if got != want {
				t.Fatalf("responseLine = %q, want %q", got, want)
			}
			if !json.Valid([]byte(strings.TrimSuffix(got, "\n"))) {
				t.Errorf("responseLine = %q: not JSON", got)
			}
		})
	}
}
