package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodState = `{"kind":"mcpsign.monitor-state","stateVersion":1,"log":{"origin":"log.example","url":"https://log.example"},"checkpoint":"log.example\n1\nAAAA\n\n— log.example abcd\n"}`

func TestParseState(t *testing.T) {
	t.Parallel()
	st, err := ParseState([]byte(goodState))
	if err != nil || st.Log.Origin != "log.example" || !strings.HasPrefix(st.Checkpoint, "log.example\n1\n") {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := ParseState([]byte(goodState + strings.Repeat(" ", maxStateFile-len(goodState)))); err != nil {
		t.Fatalf("a state of %d bytes: %v", maxStateFile, err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", `nope`, "not a JSON object"},
		{"other kind", strings.Replace(goodState, "mcpsign.monitor-state", "mcpsign.lock", 1), "not an mcpsign monitor state"},
		{"lock file", `{"kind":"mcpsign.lock","lockVersion":1}`, "unknown member"},
		{"other version", strings.Replace(goodState, `"stateVersion":1`, `"stateVersion":2`, 1), `stateVersion "2"`},
		{"version as string", strings.Replace(goodState, `"stateVersion":1`, `"stateVersion":"1"`, 1), "stateVersion"},
		{"version 1.0", strings.Replace(goodState, `"stateVersion":1`, `"stateVersion":1.0`, 1), "stateVersion"},
		{"unknown member", strings.Replace(goodState, `{"kind"`, `{"x":1,"kind"`, 1), `unknown member "x"`},
		{"repeated member", strings.Replace(goodState, `{"kind"`, `{"checkpoint":"a","kind"`, 1), "repeated member"},
		{"case variant", strings.Replace(goodState, `"log":`, `"Log":`, 1), "case-insensitive"},
		{"missing checkpoint", `{"kind":"mcpsign.monitor-state","stateVersion":1,"log":{"origin":"a","url":"b"}}`, `"checkpoint" is missing`},
		{"unknown log member", strings.Replace(goodState, `"url":`, `"key":"k","url":`, 1), `log: unknown member "key"`},
		{"empty origin", strings.Replace(goodState, `"origin":"log.example"`, `"origin":""`, 1), "log.origin is empty"},
		{"trailing data", goodState + `{}`, ""},
		{"array", `[` + goodState + `]`, "not a JSON object"},
		{"empty checkpoint", strings.Replace(goodState, `"checkpoint":"log.example\n1\nAAAA\n\n— log.example abcd\n"`, `"checkpoint":""`, 1), "checkpoint is empty"},
		{"a version of 33 digits", strings.Replace(goodState, `"stateVersion":1`, `"stateVersion":`+strings.Repeat("1", 33), 1), `stateVersion "` + strings.Repeat("1", 32) + `"…,`},
		{"a version of 32 digits", strings.Replace(goodState, `"stateVersion":1`, `"stateVersion":`+strings.Repeat("1", 32), 1), `stateVersion "` + strings.Repeat("1", 32) + `",`},
		{"one byte over the bound", goodState + strings.Repeat(" ", maxStateFile+1-len(goodState)), "more than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseState([]byte(tc.in))
			if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrState with %q", err, tc.want)
			}
		})
	}
}

func TestStateRoundTripAndForeignFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	st, _ := ParseState([]byte(goodState))
	if err := WriteState(p, st); err != nil {
		t.Fatal(err)
	}
	back, err := ReadState(p)
	if err != nil || *back != *st {
		t.Fatalf("%+v %v", back, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	// A file that is not ours is an error and stays as it was.
	foreign := []byte(`{"kind":"mcpsign.policy","policyVersion":1}`)
	if err := os.WriteFile(p, foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(p); !errors.Is(err, ErrState) {
		t.Fatalf("err %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(foreign) {
		t.Fatal("the foreign file changed")
	}
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(goodState))
	f.Add([]byte(`{"kind":"mcpsign.monitor-state","stateVersion":1,"log":{"origin":"a","url":""},"checkpoint":"x"}`))
	f.Add([]byte(`{"kind":"mcpsign.monitor-state","stateVersion":1,"log":{"origin":"a","url":"","origin":"b"},"checkpoint":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseState(data)
		if err != nil {
			if !errors.Is(err, ErrState) {
				t.Fatalf("error not ErrState: %v", err)
			}
			return
		}
		if st.Kind != StateKind || st.StateVersion != StateVersion || st.Log.Origin == "" || st.Checkpoint == "" {
			t.Fatalf("accepted %+v", st)
		}
		// What is accepted writes back to something accepted, equal.
		out, err := st.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseState(out)
		if err != nil || *again != *st {
			t.Fatalf("round trip: %+v %v", again, err)
		}
	})
}

func TestTilePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		n, w  uint64
		want  string
	}{
		{"0", 0, 256, "tile/0/000"},
		{"0", 5, 0, "tile/0/005"}, // 0: full
		{"0", 0, 3, "tile/0/000.p/3"},
		{"entries", 1234067, 256, "tile/entries/x001/x234/067"},
		{"1", 1000, 17, "tile/1/x001/000.p/17"},
	} {
		if got := tilePath(tc.level, tc.n, tc.w); got != tc.want {
			t.Errorf("tilePath(%s, %d, %d) = %s, want %s", tc.level, tc.n, tc.w, got, tc.want)
		}
	}
	for _, tc := range []struct {
		level   uint
		n, size uint64
		want    uint64
	}{
		{0, 0, 1, 1}, {0, 0, 256, 256}, {0, 1, 300, 44}, {1, 0, 70000, 256}, {1, 1, 70000, 17}, {0, 0, 1000, 256},
	} {
		if got := partialWidth(tc.level, tc.n, tc.size); got != tc.want {
			t.Errorf("partialWidth(%d, %d, %d) = %d, want %d", tc.level, tc.n, tc.size, got, tc.want)
		}
	}
}

func TestSplitBundle(t *testing.T) {
	t.Parallel()
	got, err := splitBundle([]byte{0, 1, 'a', 0, 2, 'b', 'c'}, nil)
	if err != nil || len(got) != 2 || string(got[1]) != "bc" {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range [][]byte{{0}, {0, 2, 'a'}, {0, 1, 'a', 9}} {
		if _, err := splitBundle(bad, nil); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
