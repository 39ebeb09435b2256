package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/nofollow"
)

// TestShow: the events a filter selects, for people or as the lines
// written; a broken line ends the output after the events before it.
func TestShow(t *testing.T) {
	path, lines := writeLog(t, 4)
	text := func(n int) string {
		var b strings.Builder
		r := Record{Line: n + 1, Event: event(n)}
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		o    ShowOptions
		want string
	}{
		{"all, text", ShowOptions{}, text(0) + text(1) + text(2) + text(3)},
		{"since, json", ShowOptions{Filter: Filter{Since: event(2).Time}, JSON: true}, string(lines[2]) + string(lines[3])},
		{"other server", ShowOptions{Filter: Filter{Server: "files"}}, ""},
	} {
		var b bytes.Buffer
		if err := Show(path, &b, tc.o); err != nil || b.String() != tc.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", tc.name, err, b.String(), tc.want)
		}
	}
	broken := filepath.Join(t.TempDir(), "broken.jsonl")
	if err := os.WriteFile(broken, append(append([]byte{}, lines[0]...), lines[2]...), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err := Show(broken, &b, ShowOptions{JSON: true})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || b.String() != string(lines[0]) {
		t.Errorf("broken log: %v, wrote %q", err, b.String())
	}
	link := filepath.Join(t.TempDir(), "link.jsonl")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := Show(link, &b, ShowOptions{}); !errors.Is(err, nofollow.ErrSymlink) {
		t.Errorf("symbolic link: %v", err)
	}
}

func TestBroken(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{os.ErrNotExist, false},
		{fmt.Errorf("audit log a: %w", &LineError{Line: 3, Err: ErrChain}), true},
		{fmt.Errorf("lock x: %w", ErrAnchor), true},
		{errors.New("the hash chain is broken"), false},
	} {
		if got := Broken(tc.err); got != tc.want {
			t.Errorf("Broken(%v) = %v", tc.err, got)
		}
	}
}
