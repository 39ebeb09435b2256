package boundedfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	errMine := errors.New("my file is too large")
	tests := []struct {
		name     string
		path     string
		limit    int64
		tooLarge error
		want     string
		is       error
	}{
		{"under the limit", file, 11, nil, "0123456789", nil},
		{"at the limit", file, 10, nil, "0123456789", nil},
		{"over the limit", file, 9, nil, "", ErrTooLarge},
		{"over, the caller's error", file, 9, errMine, "", errMine},
		{"missing", filepath.Join(dir, "missing"), 10, nil, "", fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(tc.path, tc.limit, tc.tooLarge)
			if tc.is != nil {
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.path) {
					t.Fatalf("err %v, want %v naming the path", err, tc.is)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("%q, %v", got, err)
			}
		})
	}
	// A file that never ends is refused after limit+1 bytes.
	if _, err := Read("/dev/zero", 1<<10, nil); err != nil && !errors.Is(err, ErrTooLarge) {
		t.Errorf("/dev/zero: %v", err)
	}
}
