package mcpwire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		max   int
		lines []string
		err   error
	}{
		{"lines", "a\nbc\r\n\nd", 10, []string{"a\n", "bc\r\n", "\n", "d"}, io.EOF},
		{"at the cap", "12345\n", 5, []string{"12345\n"}, io.EOF},
		{"at the cap with CRLF", "12345\r\n", 5, []string{"12345\r\n"}, io.EOF},
		{"over the cap", "123456\n", 5, nil, ErrMessageTooLarge},
		{"over the cap, last line", "ok\n123456", 5, []string{"ok\n"}, ErrMessageTooLarge},
		{"long line across buffers", strings.Repeat("x", 200<<10) + "\n", 300 << 10, []string{strings.Repeat("x", 200<<10) + "\n"}, io.EOF},
		{"long line over the cap", strings.Repeat("x", 200<<10) + "\n", 100 << 10, nil, ErrMessageTooLarge},
		{"empty", "", 5, nil, io.EOF},
		// The buffer fills exactly at the cap plus its "\r" (two buffers of
		// readBufferBytes), the "\n" comes next: at the cap, not over it.
		{"at the cap with CRLF across buffers", strings.Repeat("x", 2*readBufferBytes-1) + "\r\n", 2*readBufferBytes - 1, []string{strings.Repeat("x", 2*readBufferBytes-1) + "\r\n"}, io.EOF},
		{"over the cap with CRLF across buffers", strings.Repeat("x", 2*readBufferBytes) + "\r\n", 2*readBufferBytes - 1, nil, ErrMessageTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lr := NewLineReader(strings.NewReader(c.in), c.max)
			var got []string
			var err error
			for {
				var line []byte
				if line, err = lr.Next(); err != nil {
					break
				}
				got = append(got, string(line))
			}
			if !errors.Is(err, c.err) {
				t.Errorf("error %v, want %v", err, c.err)
			}
			if strings.Join(got, "|") != strings.Join(c.lines, "|") {
				t.Errorf("lines %q, want %q", got, c.lines)
			}
		})
	}
}

// FuzzLineReader: the lines read are the input, in order, each within the
// cap; nothing is lost but what follows a line over the cap.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), 3)
	f.Add([]byte("\n\n\n"), 1)
	f.Add(bytes.Repeat([]byte("z"), 70000), 65536)
	// Across the reader's buffer (readBufferBytes): a line end split at its
	// edge, a line exactly at the cap, one just over it.
	f.Add(append(bytes.Repeat([]byte("y"), readBufferBytes-1), "\r\nnext\n"...), readBufferBytes)
	f.Add(append(bytes.Repeat([]byte("y"), 3*readBufferBytes+7), '\n'), 3*readBufferBytes+7)
	f.Add(append(bytes.Repeat([]byte("y"), 3*readBufferBytes+8), '\n'), 3*readBufferBytes+7)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit <= 0 || limit > 1<<20 {
			return
		}
		lr := NewLineReader(bytes.NewReader(data), limit)
		var got []byte
		for {
			line, err := lr.Next()
			if err != nil {
				if errors.Is(err, io.EOF) && !bytes.Equal(got, data) {
					t.Fatalf("read %q of %q", got, data)
				}
				if errors.Is(err, ErrMessageTooLarge) {
					rest := data[len(got):]
					first := rest
					if i := bytes.IndexByte(rest, '\n'); i >= 0 {
						first = rest[:i+1]
					}
					if len(Content(first)) <= limit {
						t.Fatalf("a line within the cap was refused: %q (cap %d)", first, limit)
					}
				}
				return
			}
			if len(Content(line)) > limit {
				t.Fatalf("a line over the cap: %d > %d", len(Content(line)), limit)
			}
			got = append(got, line...)
		}
	})
}
