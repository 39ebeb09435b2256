//go:build unix

package boundedfile

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestReadFIFO: a named pipe nobody writes reads as empty at once (it used
// to block in open forever); one with a writer is read to its end.
func TestReadFIFO(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		writer string // "" means no writer ever opens the pipe
	}{
		{"no writer", ""},
		{"a writer", "key material"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(dir, tc.name)
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			if tc.writer != "" {
				// The writer is the read end's peer: open it once the
				// reader is there (O_WRONLY blocks until then).
				go func() {
					w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err != nil {
						return
					}
					time.Sleep(20 * time.Millisecond) // the reader waits for data, not for EOF
					w.WriteString(tc.writer)
					w.Close()
				}()
			}
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				d, err := Read(fifo, 1<<10, nil)
				done <- result{d, err}
			}()
			select {
			case r := <-done:
				if tc.writer == "" {
					if r.err != nil || len(r.data) != 0 {
						t.Fatalf("no writer: %q, %v; want empty", r.data, r.err)
					}
					return
				}
				// With a writer that opens after the reader, the open may
				// see no writer yet and read empty; a writer already there
				// (the shell's /dev/fd/N) is read to its end.
				if r.err != nil || len(r.data) != 0 && string(r.data) != tc.writer {
					t.Fatalf("%q, %v", r.data, r.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Read blocked on a named pipe")
			}
		})
	}
}

// TestReadPipeFD: /dev/fd/N of a pipe whose writer is open, as a shell's
// process substitution gives, is read to its end.
func TestReadPipeFD(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s: %v", path, err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.WriteString("0123456789")
		w.Close()
	}()
	got, err := Read(path, 100, nil)
	if err != nil || string(got) != "0123456789" {
		t.Fatalf("%q, %v", got, err)
	}
}
