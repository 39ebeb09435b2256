//go:build unix

// Package rawio reads and writes files that are in Go's poller (pipes from
// os.Pipe, a stdin made non-blocking) with raw system calls, and waits in
// the poller when they would block.
//
// Why: os.File enters every read and write through the runtime's system
// call path, which wakes the runtime's monitor thread (sysmon) whenever the
// whole process was idle. A relay is idle between every two messages, so
// each round trip paid two or three extra thread wake-ups for it, more than
// the relay's own work on a machine where a wake-up costs tens of
// microseconds (docs/PERFORMANCE.md: half the context switches, a fifth
// less latency). A non-blocking call returns at once, so it need not tell
// the runtime it might block.
package rawio

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Reader returns r reading by raw system calls when r is an *os.File in
// the poller (non-blocking), and r itself otherwise.
func Reader(r io.Reader) io.Reader {
	if f, ok := r.(*os.File); ok {
		if rf := wrap(f); rf != nil {
			return rf
		}
	}
	return r
}

// Writer returns w writing by raw system calls when w is an *os.File in
// the poller (non-blocking), and w itself otherwise.
func Writer(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		if rf := wrap(f); rf != nil {
			return rf
		}
	}
	return w
}

// file is an *os.File in the poller, read and written by raw system calls.
// Closing the *os.File ends a wait, as it does for os.File's own methods.
// The functions given to the poller are made once, with their arguments
// and results in the struct under a mutex per direction, so that a read or
// write allocates nothing.
type file struct {
	f  *os.File
	rc syscall.RawConn

	rmu    sync.Mutex
	rbuf   []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	wmu     sync.Mutex
	wbuf    []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
}

func wrap(f *os.File) *file {
	// Only a file in the poller takes deadlines: a blocking one must keep
	// going through the runtime, whose monitor hands its processor on
	// while it blocks.
	if f.SetDeadline(time.Time{}) != nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	r := &file{f: f, rc: rc}
	r.readFn = func(fd uintptr) bool {
		r.rn, r.rerrno = rawCall(syscall.SYS_READ, fd, r.rbuf)
		return r.rerrno != syscall.EAGAIN
	}
	r.writeFn = func(fd uintptr) bool {
		r.wn, r.werrno = rawCall(syscall.SYS_WRITE, fd, r.wbuf)
		return r.werrno != syscall.EAGAIN
	}
	return r
}

func (r *file) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rmu.Lock()
	defer r.rmu.Unlock()
	r.rbuf = p
	err := r.rc.Read(r.readFn)
	r.rbuf = nil
	switch {
	case err != nil:
		return 0, pollError("read", r.f, err)
	case r.rerrno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: r.rerrno}
	case r.rn == 0:
		return 0, io.EOF
	}
	return r.rn, nil
}

func (r *file) Write(p []byte) (int, error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	defer func() { r.wbuf = nil }()
	written := 0
	for written < len(p) {
		r.wbuf = p[written:]
		if err := r.rc.Write(r.writeFn); err != nil {
			return written, pollError("write", r.f, err)
		}
		if r.werrno != 0 {
			return written, &os.PathError{Op: "write", Path: r.f.Name(), Err: r.werrno}
		}
		written += r.wn
	}
	return written, nil
}

// pollError gives an error of the poller the meaning os.File gives it: we
// set no deadline, so it means the file was closed (os.ErrClosed).
func pollError(op string, f *os.File, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: f.Name(), Err: err}
}

// rawCall makes one read or write of p on the non-blocking fd, again when a
// signal interrupted it.
func rawCall(trap uintptr, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		r1, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r1), 0
	}
}
