package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcpsign/mcpsign/internal/filelock"
)

// FileLockSuffix names the sidecar file whose flock serializes the writers
// of a log: PATH + FileLockSuffix, created empty and never removed.
const FileLockSuffix = ".lock"

// Record is one line of a log as read: its number (from 1), its byte
// offset, the event, and the line's digest (the next line's prev).
type Record struct {
	Line   int
	Offset int64
	Event  *Event
	Digest string
	// Raw is the line's bytes without its newline; valid only during the
	// callback of Scan.
	Raw []byte
}

// Scan reads the log r line by line and calls fn with every line that is
// whole, is an event (ParseLine) and continues the chain: the first line's
// prev is null, every other's is the LineDigest of the line before. It stops
// at the first line that is not, with a *LineError naming it (wrapping
// ErrMalformed, ErrChain or ErrTorn), or at the first error of fn or r. An
// empty log is a valid log with no events.
func Scan(r io.Reader, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		prev   string
		offset int64
		buf    []byte
	)
	for n := 1; ; n++ {
		buf = buf[:0]
		for {
			chunk, err := br.ReadSlice('\n')
			buf = append(buf, chunk...)
			if len(buf) > MaxLineBytes {
				return &LineError{Line: n, Offset: offset, Err: ErrMalformed, Reason: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				if len(buf) == 0 {
					return nil
				}
				return &LineError{Line: n, Offset: offset, Err: ErrTorn, Reason: fmt.Sprintf(
					"%d bytes without a newline (a writer was killed mid-write); the log is whole up to byte %d: cut the rest with 'mcpsign audit repair' (or truncate -s %d)", len(buf), offset, offset)}
			}
			return err
		}
		line := buf[:len(buf)-1]
		ev, err := parseLine(line)
		if err != nil {
			return &LineError{Line: n, Offset: offset, Err: ErrMalformed, Reason: err.Error()}
		}
		if ev.Prev != prev {
			want := "null"
			if prev != "" {
				want = prev
			}
			got := "null"
			if ev.Prev != "" {
				got = ev.Prev
			}
			return &LineError{Line: n, Offset: offset, Err: ErrChain, Reason: fmt.Sprintf(
				"its prev is %s, the digest of the line before is %s: a line before it (or this one) was removed, edited or moved", got, want)}
		}
		prev = LineDigest(line)
		if err := fn(Record{Line: n, Offset: offset, Event: ev, Digest: prev, Raw: line}); err != nil {
			return err
		}
		offset += int64(len(buf))
	}
}

// Verify checks the whole log at path (Scan) and returns the number of
// events it holds; a broken log is a *LineError naming the first bad line.
func Verify(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	err = Scan(f, func(Record) error { n++; return nil })
	return n, err
}

// Append adds e as the log's last line, creating the log (mode 0644) when
// it is missing. It holds an exclusive flock on PATH.lock (waiting as long
// as ctx allows, or filelock.DefaultWait) from reading the last line to the
// fsync, so that concurrent writers, in any process, interleave whole lines
// and each continues the chain. It refuses, writing nothing, a log whose
// last line is not whole (ErrTorn) or is not an event (ErrMalformed): its
// chain cannot be continued. Only the last line is read: Verify checks the
// rest. e.Prev is set to the digest of that line.
func Append(ctx context.Context, path string, e *Event) error {
	return filelock.With(ctx, path+FileLockSuffix, "another mcpsign is writing the audit log", func() error {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		prev, err := lastLineDigest(f)
		if err != nil {
			return fmt.Errorf("audit log %s: not appending: %w", path, err)
		}
		e.Prev = prev
		line, err := e.Marshal()
		if err != nil {
			return fmt.Errorf("audit event: %w", err)
		}
		// One write: the kernel appends it at the end as one piece.
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
		return f.Close()
	})
}

// lastLineDigest returns the LineDigest of f's last line, "" when f is
// empty, after checking that the line is whole and is an event.
func lastLineDigest(f *os.File) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := fi.Size()
	if size == 0 {
		return "", nil
	}
	n := min(size, int64(MaxLineBytes)+1)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, size-n); err != nil {
		return "", err
	}
	if tail[len(tail)-1] != '\n' {
		return "", &LineError{Line: 0, Offset: size, Err: ErrTorn, Reason: "a writer was killed mid-write: run 'mcpsign audit verify' to see which line, 'mcpsign audit repair' to cut it"}
	}
	body := tail[:len(tail)-1]
	start := bytes.LastIndexByte(body, '\n') + 1
	if start == 0 && n < size {
		return "", &LineError{Line: 0, Offset: size - n, Err: ErrMalformed, Reason: "the last line is too long"}
	}
	line := body[start:]
	if _, err := parseLine(line); err != nil {
		return "", &LineError{Line: 0, Offset: size - n + int64(start), Err: ErrMalformed, Reason: "the last line is not an event (" + err.Error() + "): run 'mcpsign audit verify'"}
	}
	return LineDigest(line), nil
}

// Repair cuts a partial last line, the one a killed writer leaves, so that
// writers can go on from the last whole line. It holds the writers' file
// lock, checks the log (Scan), and truncates only when every line before
// the partial one verifies; it returns the number of bytes cut (0 when the
// log was whole). Any other break is refused (the *LineError of Scan):
// an edited or removed line is evidence, and Repair never rewrites it.
func Repair(ctx context.Context, path string) (int64, error) {
	var cut int64
	err := filelock.With(ctx, path+FileLockSuffix, "another mcpsign is writing the audit log", func() error {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		err = Scan(f, func(Record) error { return nil })
		var le *LineError
		if err == nil {
			return nil
		}
		if !errors.As(err, &le) || !errors.Is(err, ErrTorn) {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if err := f.Truncate(le.Offset); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		cut = fi.Size() - le.Offset
		return f.Close()
	})
	return cut, err
}
