package mcpwire

import (
	"errors"
	"testing"
)

func TestLooseMatch(t *testing.T) {
	const ts, gosdk, both = "the TypeScript SDK", "go-sdk", "the TypeScript SDK and go-sdk"
	for _, tt := range []struct {
		req, resp, by string
	}{
		{"0", "0", ""}, // byte-identical: not loose
		{"0", "-0", both},
		{"0", "0.0", both},
		{"0", "0e5", both},
		{"0", `"0"`, ts},
		{"0", `""`, ts},
		{"0", `" 0 "`, ts},
		{"0", `"0x0"`, ts},
		{"0", "null", ""},
		{"2", "2.5", gosdk},
		{"2", "2.9", gosdk},
		{"2", "2e0", both},
		{"2", `"2"`, ts},
		{"2", `"0x2"`, ts},
		{"2", `"2_0"`, ""},
		{"2", "3", ""},
		{"2", `"two"`, ""},
		{`"a"`, `"\u0061"`, gosdk},
		{`"a"`, `"b"`, ""},
		{`"mcpsign-1"`, `"mcpsign-1 "`, ""},
		// Each end of the digits and the other bytes of a number in a string.
		{"9", "9.0", both},
		{"9", `"9"`, ts},
		{"2", `"2.0"`, ts},
		{"200", `"2e2"`, ts},
		{"200", `"2E+2"`, ts},
		{"-2", `"-2"`, ts},
		{"2", `"2/"`, ""},
		{"2", `"2:"`, ""},
		// Number() trims U+2000 to U+200A, not the code points around them.
		{"2", `"\u20002\u200a"`, ts},
		{"2", `"\u1fff2"`, ""},
		{"2", `"2\u200b"`, ""},
		{"", "1", ""}, // nothing is no number
		{"1", "", ""},
	} {
		if got := LooseMatch([]byte(tt.req), []byte(tt.resp)); got != tt.by {
			t.Errorf("LooseMatch(%s, %s) = %q, want %q", tt.req, tt.resp, got, tt.by)
		}
	}
}

func TestPending(t *testing.T) {
	var p Pending[int]
	if err := p.Add([]byte("1"), 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Add([]byte("1"), 2); !errors.Is(err, ErrIDInUse) {
		t.Errorf("a second Add of one id: %v, want ErrIDInUse", err)
	}
	p.Add([]byte(`"x"`), 3)
	for _, id := range []string{"1.0", "-1", `"1"`, `" x"`, "2"} {
		_, err := p.Take([]byte(id))
		var ie *IDError
		if !errors.As(err, &ie) || !errors.Is(err, ErrProtocol) {
			t.Errorf("Take(%s) = %v, want an *IDError wrapping ErrProtocol", id, err)
		}
	}
	if v, err := p.Take([]byte("1")); err != nil || v != 1 {
		t.Errorf("Take(1) = %v, %v", v, err)
	}
	if _, err := p.Take([]byte("1")); err == nil {
		t.Errorf("a second answer to one request was taken")
	}
	n := 0
	p.Drain(func([]byte, int) { n++ })
	if n != 1 || p.Len() != 0 {
		t.Errorf("Drain saw %d, left %d", n, p.Len())
	}
}
