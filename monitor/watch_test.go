package monitor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsign/mcpsign/verify"
)

// TestSetupPrepare: what Prepare refuses before anything is read.
func TestSetupPrepare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "state.json")
	st := &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: "log.example", URL: "https://log.example"}, Checkpoint: "log.example\n1\nAAAA\n"}
	if err := WriteState(existing, st); err != nil {
		t.Fatal(err)
	}
	id := verify.Identity{SAN: "a@example.com", Issuer: "https://issuer.example"}
	missing := filepath.Join(dir, "none.json")
	for _, tc := range []struct {
		name string
		s    Setup
		want error
	}{
		{"nothing watched", Setup{StatePath: missing, Init: true}, ErrNothingWatched},
		{"no state", Setup{Identity: id, StatePath: missing, LogURL: "https://log.example"}, ErrNoState},
		{"state exists", Setup{Identity: id, StatePath: existing, Init: true, LogURL: "https://log.example"}, ErrStateExists},
		{"no log", Setup{Identity: id, StatePath: missing, Init: true}, ErrSeveralLogs},
		{"bad digest", Setup{Identity: id, StatePath: missing, Init: true, ReleasedDigests: []string{"md5:00"}}, nil},
	} {
		_, _, err := tc.s.Prepare(context.Background())
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	opts, prev, err := Setup{Identity: id, StatePath: existing}.Prepare(context.Background())
	if err != nil || prev == nil || opts.LogURL != "https://log.example" || opts.Identities == nil {
		t.Fatalf("%+v %+v %v", opts, prev, err)
	}
	if _, err := os.Stat(existing); err != nil {
		t.Fatal(err)
	}
}
