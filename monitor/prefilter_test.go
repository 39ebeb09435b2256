package monitor

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestNeedles: wherever the needle sits in the DER, the base64 of the DER
// may hold it; one without it does not.
func TestNeedles(t *testing.T) {
	t.Parallel()
	needle := "publisher@example.com"
	n := newNeedles([][]byte{[]byte(needle)})
	p := newB64Needles(n)
	for off := range 7 {
		for tail := range 4 {
			der := strings.Repeat("\x30", off) + needle + strings.Repeat("\x01", tail)
			if !p.mayHold([]byte(base64.StdEncoding.EncodeToString([]byte(der)))) || !n.mayHold([]byte(der)) {
				t.Errorf("offset %d tail %d: skipped", off, tail)
			}
		}
	}
	other := "xx someone@example.com yy"
	if p.mayHold([]byte(base64.StdEncoding.EncodeToString([]byte(other)))) || n.mayHold([]byte(other)) {
		t.Error("a certificate without the needle may hold it")
	}
	if newNeedles([][]byte{[]byte(needle), nil}) != nil || newB64Needles(newNeedles([][]byte{[]byte("ab")})) != nil {
		t.Error("needles for an identity without required bytes")
	}
}
