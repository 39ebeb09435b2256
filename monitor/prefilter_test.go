package monitor

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestNeedles: wherever the needle sits in the DER, the base64 of the DER
// may hold it; one without it does not. A needle of 5 bytes, the least
// that has three non-empty base64 encodings, is looked for in base64; one
// of 4 is not.
func TestNeedles(t *testing.T) {
	t.Parallel()
	for _, needle := range []string{"publisher@example.com", "acme/"} {
		n := newNeedles([][]byte{[]byte(needle)})
		p := newB64Needles(n)
		if p == nil {
			t.Fatalf("%q: no base64 needles", needle)
		}
		for off := range 7 {
			for tail := range 4 {
				der := strings.Repeat("\x30", off) + needle + strings.Repeat("\x01", tail)
				if !p.mayHold([]byte(base64.StdEncoding.EncodeToString([]byte(der)))) || !n.mayHold([]byte(der)) {
					t.Errorf("%q: offset %d tail %d: skipped", needle, off, tail)
				}
			}
		}
		other := "xx someone@example.org yy"
		if p.mayHold([]byte(base64.StdEncoding.EncodeToString([]byte(other)))) || n.mayHold([]byte(other)) {
			t.Errorf("%q: a certificate without the needle may hold it", needle)
		}
	}
	if newNeedles([][]byte{[]byte("publisher@example.com"), nil}) != nil || newB64Needles(newNeedles([][]byte{[]byte("acme")})) != nil {
		t.Error("needles for an identity without required bytes")
	}
}
