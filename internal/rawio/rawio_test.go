//go:build unix

package rawio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestWrapsOnlyPollableFiles(t *testing.T) {
	r, w := pipe(t)
	if _, ok := Reader(r).(*file); !ok {
		t.Error("an os.Pipe reader was not wrapped")
	}
	if _, ok := Writer(w).(*file); !ok {
		t.Error("an os.Pipe writer was not wrapped")
	}
	// A regular file is not in the poller: it keeps os.File's path.
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Reader(f) != io.Reader(f) || Writer(f) != io.Writer(f) {
		t.Error("a regular file was wrapped")
	}
	var buf bytes.Buffer
	if Reader(&buf) != io.Reader(&buf) {
		t.Error("a non-file was wrapped")
	}
}

func TestReadWrite(t *testing.T) {
	r, w := pipe(t)
	rr, ww := Reader(r), Writer(w)
	// More than a pipe holds (64 KiB on Linux): the writer waits in the
	// poller (EAGAIN) until the reader drains it.
	want := bytes.Repeat([]byte("mcpsign "), 64<<10)
	done := make(chan error, 1)
	go func() {
		n, err := ww.Write(want)
		if err == nil && n != len(want) {
			err = errors.New("short write")
		}
		w.Close()
		done <- err
	}()
	got, err := io.ReadAll(rr)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	if n, err := rr.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("after EOF: %d, %v", n, err)
	}
}

func TestCloseEndsAWait(t *testing.T) {
	r, _ := pipe(t)
	rr := Reader(r)
	done := make(chan error, 1)
	go func() {
		_, err := rr.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("err %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the file did not end the read")
	}
}

func TestWriteToClosedPipe(t *testing.T) {
	r, w := pipe(t)
	r.Close()
	_, err := Writer(w).Write([]byte("x"))
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("err %v, want EPIPE", err)
	}
}
