package textout

import (
	"bytes"
	"errors"
	"testing"
)

// failAfter accepts n writes, then fails every one.
type failAfter struct {
	n   int
	buf bytes.Buffer
}

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errFull
	}
	f.n--
	return f.buf.Write(p)
}

// TestWriterKeepsFirstError: after a failed write nothing more is written
// and the first error is returned.
func TestWriterKeepsFirstError(t *testing.T) {
	f := &failAfter{n: 1}
	e := NewWriter(f)
	e.Printf("a%d\n", 1)
	e.Printf("b\n")
	if _, err := e.Write([]byte("c\n")); !errors.Is(err, errFull) {
		t.Errorf("Write after a failure: %v", err)
	}
	DiffLines(e, "d\n", "  ")
	if f.buf.String() != "a1\n" || !errors.Is(e.Err(), errFull) {
		t.Errorf("wrote %q, error %v", f.buf.String(), e.Err())
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Plural(1, "error"), "1 error"},
		{Plural(0, "notice"), "0 notices"},
		{Plural(2, "breaking change"), "2 breaking changes"},
		{ServerName("notes", "1.2.0"), "notes 1.2.0"},
		{ServerName("", ""), "(unnamed server)"},
		{ServerName("a\u202eb", "1\x1b"), `a\u{202E}b 1\u{1B}`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	var b bytes.Buffer
	e := NewWriter(&b)
	DiffLines(e, "@@ -1 +1 @@\n-a\n+a\u200b\tb\n", "    ")
	if want := "    @@ -1 +1 @@\n    -a\n    +a\\u{200B}\tb\n"; b.String() != want || e.Err() != nil {
		t.Errorf("DiffLines %q, want %q (%v)", b.String(), want, e.Err())
	}
}
