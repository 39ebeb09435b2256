package proxy

import (
	"testing"
	"time"
)

// TestOptionsDefaults: an option left zero or negative takes its default,
// one given is kept.
func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   Options
		want Options
	}{
		{"zero", Options{}, Options{MaxMessageBytes: DefaultMaxMessageBytes, CheckTimeout: DefaultCheckTimeout, ShutdownGrace: DefaultShutdownGrace, MaxHeldBytes: DefaultMaxHeldBytes}},
		{"negative", Options{MaxMessageBytes: -1, CheckTimeout: -1, ShutdownGrace: -1, MaxHeldBytes: -1},
			Options{MaxMessageBytes: DefaultMaxMessageBytes, CheckTimeout: DefaultCheckTimeout, ShutdownGrace: DefaultShutdownGrace, MaxHeldBytes: DefaultMaxHeldBytes}},
		{"given", Options{MaxMessageBytes: 7, CheckTimeout: time.Millisecond, ShutdownGrace: 2 * time.Millisecond, MaxHeldBytes: 9},
			Options{MaxMessageBytes: 7, CheckTimeout: time.Millisecond, ShutdownGrace: 2 * time.Millisecond, MaxHeldBytes: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.in.withDefaults()
			if got.MaxMessageBytes != tc.want.MaxMessageBytes || got.CheckTimeout != tc.want.CheckTimeout ||
				got.ShutdownGrace != tc.want.ShutdownGrace || got.MaxHeldBytes != tc.want.MaxHeldBytes {
				t.Errorf("withDefaults = message %d, check %v, grace %v, held %d; want %d, %v, %v, %d",
					got.MaxMessageBytes, got.CheckTimeout, got.ShutdownGrace, got.MaxHeldBytes,
					tc.want.MaxMessageBytes, tc.want.CheckTimeout, tc.want.ShutdownGrace, tc.want.MaxHeldBytes)
			}
			if got.Stderr == nil || got.OnEvent == nil {
				t.Error("withDefaults left Stderr or OnEvent nil")
			}
		})
	}
}
