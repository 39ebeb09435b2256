package options

import (
	"testing"
	"time"
)

func TestPositiveDuration(t *testing.T) {
	var d time.Duration
	for _, bad := range []string{"0", "0s", "-1s", "6", "x"} {
		if err := (positiveDuration{&d}).Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (positiveDuration{&d}).Set("6s"); err != nil || d != 6*time.Second {
		t.Errorf("6s: %v %v", d, err)
	}
}
