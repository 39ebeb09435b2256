package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lineOf marshals e with prev, newline included.
func lineOf(t *testing.T, e *Event, prev string) []byte {
	t.Helper()
	e.Prev = prev
	line, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(line, '\n')
}

// TestLastLineOffsets: the byte each refusal of the last line names is the
// byte that line starts (docs/AUDIT.md "Reading": one line, one offset),
// for a log shorter and longer than one read of MaxLineBytes, and a log of
// one whole event is read whole (the bounds are exact).
func TestLastLineOffsets(t *testing.T) {
	t.Parallel()
	one := lineOf(t, event(0), "")
	two := append(append([]byte(nil), one...), lineOf(t, event(1), LineDigest(one[:len(one)-1]))...)
	// filler makes a log longer than MaxLineBytes: whole lines of a valid
	// chain are not needed before the last line, only newlines.
	filler := bytes.Repeat([]byte(strings.Repeat("x", 1000)+"\n"), MaxLineBytes/1000+2)
	for _, tc := range []struct {
		name   string
		data   []byte
		err    error
		offset int64
		reason string
	}{
		{"one event", one, nil, 0, ""},
		{"two events", two, nil, 0, ""},
		{"torn, short log", append(append([]byte(nil), two...), "{\"ti"...), ErrTorn, int64(len(two)), "killed mid-write"},
		{"torn, one partial line", []byte(`{"time":`), ErrTorn, 0, "killed mid-write"},
		{"torn, long log", append(append([]byte(nil), filler...), "{\"ti"...), ErrTorn, int64(len(filler)), "killed mid-write"},
		{"not an event, short log", append(append([]byte(nil), two...), "junk\n"...), ErrMalformed, int64(len(two)), "not an event"},
		{"not an event, long log", append(append([]byte(nil), filler...), "junk\n"...), ErrMalformed, int64(len(filler)), "not an event"},
		{"a last line too long", append(bytes.Repeat([]byte("x"), MaxLineBytes+10), '\n'), ErrMalformed, 10, "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d, ev, err := lastLine(f)
			if tc.err == nil {
				last := tc.data[bytes.LastIndexByte(tc.data[:len(tc.data)-1], '\n')+1 : len(tc.data)-1]
				if err != nil || ev == nil || d != LineDigest(last) {
					t.Fatalf("lastLine: %q, %v, %v; want the digest of %.40q", d, ev, err, last)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, tc.err) || le.Offset != tc.offset || !strings.Contains(le.Reason, tc.reason) {
				t.Fatalf("lastLine: %v; want %v at byte %d with %q", err, tc.err, tc.offset, tc.reason)
			}
		})
	}
}

// TestScanLineBound: a line of exactly MaxLineBytes bytes, its newline
// included, is read; one byte more is refused (the bound of docs/AUDIT.md
// is inclusive, as Marshal's).
func TestScanLineBound(t *testing.T) {
	t.Parallel()
	e := event(1)
	e.Evidence.Reason = "r"
	base := lineOf(t, e, "")
	e.Evidence.Reason = strings.Repeat("r", 1+MaxLineBytes-len(base))
	line := lineOf(t, e, "")
	if len(line) != MaxLineBytes {
		t.Fatalf("the line is %d bytes, want %d", len(line), MaxLineBytes)
	}
	if err := Scan(bytes.NewReader(line), func(Record) error { return nil }); err != nil {
		t.Fatalf("a line of MaxLineBytes: %v", err)
	}
	e.Evidence.Reason += "r"
	if _, err := e.Marshal(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the event is %d bytes", MaxLineBytes+1)) {
		t.Fatalf("Marshal of a line of MaxLineBytes+1: %v", err)
	}
	long := append(append([]byte(nil), line[:len(line)-1]...), ' ', '\n')
	var le *LineError
	if err := Scan(bytes.NewReader(long), func(Record) error { return nil }); !errors.As(err, &le) || !errors.Is(err, ErrMalformed) || le.Line != 1 {
		t.Fatalf("a line of MaxLineBytes+1: %v", err)
	}
}

// TestScanChainReason: a broken chain names both digests, or null for a
// line with none or the first line.
func TestScanChainReason(t *testing.T) {
	t.Parallel()
	one := lineOf(t, event(0), "")
	d1 := LineDigest(one[:len(one)-1])
	for _, tc := range []struct {
		name string
		log  []byte
		want string
	}{
		{"first line with a prev", lineOf(t, event(0), d1), "its prev is " + d1 + ", the digest of the line before is null"},
		{"second line without a prev", append(append([]byte(nil), one...), lineOf(t, event(1), "")...), "its prev is null, the digest of the line before is " + d1},
	} {
		err := Scan(bytes.NewReader(tc.log), func(Record) error { return nil })
		if !errors.Is(err, ErrChain) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestLineErrorText: a line names its number, the last line (Line 0) says
// so; a reason is appended only when there is one.
func TestLineErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    LineError
		want string
	}{
		{LineError{Line: 1, Offset: 0, Err: ErrTorn}, "line 1 (byte 0): " + ErrTorn.Error()},
		{LineError{Line: 0, Offset: 7, Err: ErrTorn, Reason: "r"}, "the last line (byte 7): " + ErrTorn.Error() + ": r"},
		{LineError{Line: 3, Offset: 9, Err: ErrChain, Reason: "why"}, "line 3 (byte 9): " + ErrChain.Error() + ": why"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestMarshalLogIndexBounds: an evidence logIndex is an integer from 0 to
// 2^53-1 (docs/AUDIT.md), both ends included.
func TestMarshalLogIndexBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		i  int64
		ok bool
	}{{-1, false}, {0, true}, {1, true}, {1<<53 - 1, true}, {1 << 53, false}} {
		e := event(1)
		i := tc.i
		e.Evidence = &Evidence{Method: "sigstore", LogIndex: &i}
		if _, err := e.Marshal(); (err == nil) != tc.ok {
			t.Errorf("logIndex %d: %v, want accepted: %v", tc.i, err, tc.ok)
		}
	}
}

// TestASCIIDel: DEL (0x7f) is written as a \u escape, as every character
// outside printable ASCII.
func TestASCIIDel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"{\"a\":\"x\x7fy\"}": `{"a":"x\u007fy"}`,
		"{\"a\":\"~\"}":      `{"a":"~"}`,
		"{\"a\":\"é\"}":      `{"a":"\u00e9"}`,
	} {
		if got := string(ASCII([]byte(in))); got != want {
			t.Errorf("ASCII(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRecordWriteText: what 'mcpsign audit show' prints of one event: the
// sets, instructions and each evidence member only when present, "none" for
// a missing lock.
func TestRecordWriteText(t *testing.T) {
	t.Parallel()
	idx := int64(42)
	full := event(1)
	full.LockBefore = ""
	full.Instructions = dB
	full.Evidence = &Evidence{Method: "sigstore", Identity: "alice@example.com", Issuer: "https://issuer", BundleDigest: dA, LogIndex: &idx}
	bare := event(1)
	bare.Sets, bare.Evidence = nil, &Evidence{Method: "tofu"}
	for _, tc := range []struct {
		name      string
		e         *Event
		want, not []string
	}{
		{"full", full, []string{
			"    lock: none -> " + dA + "\n",
			"    sets: tools " + dB + ", prompts " + dA + ", resourceTemplates " + dA + "\n",
			"    instructions: " + dB + "\n",
			`    evidence: sigstore, identity "alice@example.com", issuer "https://issuer", bundle "` + dA + `", log index 42` + "\n",
		}, []string{"approver", "reason"}},
		{"bare", bare, []string{"    lock: " + dA + " -> " + dA + "\n", "    evidence: tofu\n"}, []string{"sets:", "instructions:", "identity", "none"}},
	} {
		var b strings.Builder
		if err := (Record{Line: 1, Event: tc.e}).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, b.String(), w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(b.String(), n) {
				t.Errorf("%s: %q has %q", tc.name, b.String(), n)
			}
		}
	}
}

// TestRepairOrder: a last line that lost its newline gets it back only
// when it keeps the log in order after the first whole line too (Repair
// checks it as line n+1): an event older than line 1, chained to it, is
// cut.
func TestRepairOrder(t *testing.T) {
	t.Parallel()
	one := lineOf(t, event(5), "")
	older := lineOf(t, event(1), LineDigest(one[:len(one)-1]))
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, append(append([]byte(nil), one...), older[:len(older)-1]...), 0o600); err != nil {
		t.Fatal(err)
	}
	done, err := Repair(context.Background(), path)
	if err != nil || done.Newline || done.Cut != int64(len(older)-1) {
		t.Fatalf("Repair = %+v, %v; want the out-of-order line cut", done, err)
	}
	if n, err := Verify(path); err != nil || n != 1 {
		t.Fatalf("after the cut: %d, %v", n, err)
	}
}
