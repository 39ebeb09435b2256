package monitor

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestSetupPrepareOptions: what Prepare sets: the released digests, where
// a first run starts (FromIndex, 0 included; a negative one is none; not
// without Init), the client with the timeout (the given client's copy,
// left as it was; none without a timeout).
func TestSetupPrepareOptions(t *testing.T) {
	t.Parallel()
	id := verify.Identity{SAN: "a@example.com", Issuer: "https://issuer.example"}
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	given := &http.Client{Transport: &http.Transport{}}
	for _, c := range []struct {
		name    string
		s       Setup
		start   int64 // -1: none
		timeout time.Duration
		client  *http.Client // want this client, when no timeout
	}{
		{"from 0", Setup{Init: true, FromIndex: 0}, 0, 0, nil},
		{"from 7", Setup{Init: true, FromIndex: 7}, 7, 0, nil},
		{"from -1", Setup{Init: true, FromIndex: -1}, -1, 0, nil},
		{"a given client, no timeout", Setup{Init: true, FromIndex: -1, HTTPClient: given}, -1, 0, given},
		{"a given client and a timeout", Setup{Init: true, FromIndex: -1, HTTPClient: given, Timeout: 3 * time.Second}, -1, 3 * time.Second, nil},
		{"a timeout", Setup{Init: true, FromIndex: -1, Timeout: time.Second}, -1, time.Second, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := c.s
			s.Identity, s.LogURL, s.ReleasedDigests = id, "https://log.example", []string{d}
			s.StatePath = filepath.Join(t.TempDir(), "state.json")
			opts, prev, err := s.Prepare(context.Background())
			if err != nil || prev != nil {
				t.Fatalf("Prepare: %v, state %+v", err, prev)
			}
			if !opts.Released.releasedIn(d, nil) {
				t.Error("the released digest is not released")
			}
			switch {
			case c.start < 0 && opts.StartIndex != nil:
				t.Errorf("start %d, want none", *opts.StartIndex)
			case c.start >= 0 && (opts.StartIndex == nil || *opts.StartIndex != uint64(c.start)):
				t.Errorf("start %v, want %d", opts.StartIndex, c.start)
			}
			switch {
			case c.timeout == 0 && opts.HTTPClient != c.client:
				t.Errorf("client %+v, want %+v", opts.HTTPClient, c.client)
			case c.timeout != 0 && (opts.HTTPClient == nil || opts.HTTPClient == given || opts.HTTPClient.Timeout != c.timeout ||
				s.HTTPClient != nil && opts.HTTPClient.Transport != given.Transport):
				t.Errorf("client %+v, want a copy with the timeout %v", opts.HTTPClient, c.timeout)
			}
			if given.Timeout != 0 {
				t.Error("the given client was changed")
			}
		})
	}
	if _, _, err := (Setup{Identity: id, StatePath: filepath.Join(t.TempDir(), "s.json"), Init: true, LogURL: "https://log.example", ReleasedDigests: []string{"md5:00"}}).Prepare(context.Background()); err == nil || !strings.Contains(err.Error(), "released digest") {
		t.Errorf("a released digest that is none: %v", err)
	}
}

// TestWatchReportFailed: a run whose findings were not all reported (the
// report's writer failed) writes no state, and ends Watch with ErrReport:
// the next run reads the same range and reports them again. Reported,
// the state is written.
func TestWatchReportFailed(t *testing.T) {
	t.Parallel()
	w := newReleaseWorld(t)
	for _, c := range []struct {
		name     string
		reported error
	}{
		{"reported", nil},
		{"the report failed", errors.New("stdout closed")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			statePath := filepath.Join(t.TempDir(), "state.json")
			opts := Options{LogURL: w.aURL, TrustedMaterial: fakeRoot(t, w.a, w.b), KeyIDs: []string{w.key.id}}
			alerts, err := Watch(context.Background(), opts, w.prev, WatchOptions{StatePath: statePath, Reported: func() error { return c.reported }})
			_, serr := os.Stat(statePath)
			if c.reported != nil {
				if !errors.Is(err, ErrReport) || !errors.Is(serr, os.ErrNotExist) {
					t.Fatalf("error %v, state file %v; want ErrReport and no state", err, serr)
				}
				return
			}
			if err != nil || serr != nil || alerts != 3 {
				t.Fatalf("error %v, state file %v, %d alerts; want the state and 3 alerts", err, serr, alerts)
			}
		})
	}
}
