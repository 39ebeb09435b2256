package monitor

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestPrefilter: wherever the needle sits in the DER, the base64 entry
// holding it is parsed; one without it is not.
func TestPrefilter(t *testing.T) {
	t.Parallel()
	needle := "publisher@example.com"
	p := newPrefilter([][]byte{[]byte(needle)})
	for off := range 7 {
		for tail := range 4 {
			der := strings.Repeat("\x30", off) + needle + strings.Repeat("\x01", tail)
			entry := `{"rawBytes":"` + base64.StdEncoding.EncodeToString([]byte(der)) + `"}`
			if !p.mayMatch([]byte(entry)) {
				t.Errorf("offset %d tail %d: skipped", off, tail)
			}
		}
	}
	other := `{"rawBytes":"` + base64.StdEncoding.EncodeToString([]byte("xx someone@example.com yy")) + `"}`
	if p.mayMatch([]byte(other)) {
		t.Error("an entry without the needle is parsed")
	}
	if !p.mayMatch([]byte(`{"rawBytes":"\u0041"}`)) {
		t.Error("an entry with an escape is skipped")
	}
	if newPrefilter([][]byte{[]byte(needle), nil}) != nil || newPrefilter([][]byte{[]byte("ab")}) != nil {
		t.Error("a prefilter for an identity without required bytes")
	}
}
