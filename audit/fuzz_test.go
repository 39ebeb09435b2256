package audit

import (
	"bytes"
	"testing"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		last := ""
		_ = Scan(bytes.NewReader(data), func(r Record) error {
			if r.Event.Prev != last {
				t.Fatalf("line %d does not chain", r.Line)
			}
			last = r.Digest
			return nil
		})
	})
}
