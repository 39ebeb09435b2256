package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParseLine: a line that reads is one Marshal writes again byte for
// byte (one form per event), and reading never panics.
func FuzzParseLine(f *testing.F) {
	for i := range 2 {
		e := event(i)
		e.Prev = dA
		line, err := e.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	f.Add([]byte(`{"time":"2026-12-01T12:00:00Z","Time":"x"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseLine(line)
		if err != nil {
			return
		}
		again, err := e.Marshal()
		if err != nil {
			t.Fatalf("a line that reads does not write: %v", err)
		}
		e2, err := ParseLine(again)
		if err != nil {
			t.Fatalf("a written line does not read: %v\n%s", err, again)
		}
		again2, _ := e2.Marshal()
		if !bytes.Equal(again, again2) {
			t.Fatalf("not one form:\n%s\n%s", again, again2)
		}
	})
}

// FuzzScan: Scan never panics, and the records it yields chain.
func FuzzScan(f *testing.F) {
	var b bytes.Buffer
	prev := ""
	for i := range 3 {
		e := event(i)
		e.Prev = prev
		line, _ := e.Marshal()
		prev = LineDigest(line)
		b.Write(line)
		b.WriteByte('\n')
	}
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:b.Len()-3])
	for _, h := range fuzzHistories() {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		last := ""
		var at time.Time
		_ = Scan(bytes.NewReader(data), func(r Record) error {
			if r.Event.Prev != last {
				t.Fatalf("line %d does not chain", r.Line)
			}
			if r.Event.Time.Before(at) {
				t.Fatalf("line %d goes back in time", r.Line)
			}
			last, at = r.Digest, r.Event.Time
			return nil
		})
	})
}

// fuzzHistories are logs of history (anchor_test.go): whole, reordered and
// rechained, an approval removed and rechained, the last newline lost.
func fuzzHistories() [][]byte {
	chain := func(events []*Event) []byte {
		var b bytes.Buffer
		prev := ""
		for _, e := range events {
			e.Prev = prev
			line, _ := e.Marshal()
			prev = LineDigest(line)
			b.Write(line)
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	whole := chain(history())
	swapped := history()
	swapped[2], swapped[3] = swapped[3], swapped[2]
	removed := history()
	return [][]byte{whole, chain(swapped), chain(append(removed[:2:2], removed[3:]...)), whole[:len(whole)-1]}
}

// FuzzRepair: Repair never panics, changes a log only when it was torn,
// and leaves a log that it repaired whole: it verifies, and every event
// that read before it still reads.
func FuzzRepair(f *testing.F) {
	for _, h := range fuzzHistories() {
		f.Add(h)
	}
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		before, verr := Check(path, CheckOptions{})
		done, err := Repair(context.Background(), path)
		after, _ := os.ReadFile(path)
		if err != nil || done == (Repaired{}) {
			if !bytes.Equal(after, data) {
				t.Fatalf("Repair (%+v, %v) changed the log", done, err)
			}
			return
		}
		if !errors.Is(verr, ErrTorn) {
			t.Fatalf("Repair changed a log that was not torn (%v)", verr)
		}
		sum, err := Check(path, CheckOptions{})
		if err != nil || sum.Events < before.Events {
			t.Fatalf("after Repair %+v: %+v, %v (before: %d events)", done, sum, err, before.Events)
		}
		if done.Newline && !bytes.Equal(after, append(data, '\n')) || done.Cut > 0 && !bytes.Equal(after, data[:len(data)-int(done.Cut)]) {
			t.Fatalf("Repair %+v wrote %q", done, after)
		}
	})
}
