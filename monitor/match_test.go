package monitor

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRunKeyIDs: a watched key ID is "sha256:" and 64 lowercase hex digits;
// Run refuses any other form before reading the log, where one too short
// panicked and one of another algorithm or case was read as the key's
// SHA-256 (a key ID the policy never named, in the findings).
func TestRunKeyIDs(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "keyids.monitor.example")
	url := l.start(t)
	k := newKeyPair(t)
	l.add(k.signStatement(t, "a").body)
	hexPart := strings.TrimPrefix(k.id, "sha256:")
	for _, c := range []struct {
		name, id string
		ok       bool
	}{
		{"the key", k.id, true},
		{"short", "abc", false},
		{"empty", "", false},
		{"prefix only", "sha256:", false},
		{"another algorithm", "sha512:" + hexPart, false},
		{"no prefix", hexPart, false},
		{"upper-case hex", "sha256:" + strings.ToUpper(hexPart), false},
		{"one digit short", k.id[:len(k.id)-1], false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var fs []Finding
			start := uint64(0)
			_, err := Run(context.Background(), Options{LogURL: url, StartIndex: &start, TrustedMaterial: fakeRoot(t, l), KeyIDs: []string{c.id},
				OnFinding: func(f Finding) { fs = append(fs, f) }}, nil)
			if !c.ok {
				if !errors.Is(err, ErrKeyID) || len(fs) != 0 {
					t.Fatalf("error %v, findings %+v; want ErrEntry and none", err, fs)
				}
				return
			}
			if err != nil || len(fs) != 1 || fs[0].KeyID != k.id || !fs[0].Alert {
				t.Fatalf("error %v, findings %+v; want one alert of %s", err, fs, k.id)
			}
		})
	}
}

// TestCheckErrorText: a check's error names the log index from 0, and no
// index when it is -1.
func TestCheckErrorText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		index int64
		want  string
	}{
		{-1, "monitor: entry: malformed log entry: x"},
		{0, "monitor: entry at log index 0: malformed log entry: x"},
		{7, "monitor: entry at log index 7: malformed log entry: x"},
	} {
		if got := checkErr("entry", c.index, ErrEntry, "x").Error(); got != c.want {
			t.Errorf("index %d: %q, want %q", c.index, got, c.want)
		}
	}
}
