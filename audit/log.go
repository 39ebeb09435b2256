package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/filelock"
	"github.com/mcpsign/mcpsign/internal/nofollow"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// FileLockSuffix names the sidecar file whose flock serializes the writers
// of a log: PATH + FileLockSuffix, created empty and never removed.
const FileLockSuffix = ".lock"

// EmptyHead is the head of an empty log: the LineDigest of no bytes. No
// line is empty, so it is the head of no log that holds a line.
var EmptyHead = digest.Prefix + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

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

// sequence checks the order of a log's events (docs/AUDIT.md "Reading"
// rule 6): time never goes backwards, and an event's lockBefore is a lock
// an earlier event names (as its lockBefore or lockAfter), unless the
// event is the first about its server (by name).
type sequence struct {
	last     time.Time
	lastLine int
	known    map[string]bool // lock digests named so far
	servers  map[string]bool // server names seen so far
}

func (s *sequence) check(n int, ev *Event) string {
	if n > 1 && ev.Time.Before(s.last) {
		return fmt.Sprintf("its time %s is before the time of line %d (%s): lines were removed and moved, or written out of order",
			ev.Time.Format(time.RFC3339Nano), s.lastLine, s.last.Format(time.RFC3339Nano))
	}
	s.last, s.lastLine = ev.Time, n
	if s.known == nil {
		s.known, s.servers = map[string]bool{}, map[string]bool{}
	}
	name := ev.Server.Name
	if s.servers[name] && ev.LockBefore != "" && !s.known[ev.LockBefore] {
		return fmt.Sprintf("its lockBefore %s is no lock an earlier event names (as its lockBefore or lockAfter), and it is not the first event about the server %s: the event that wrote that lock was removed, or events were reordered",
			ev.LockBefore, textsafe.RawQuote(name))
	}
	s.servers[name] = true
	for _, d := range []string{ev.LockBefore, ev.LockAfter} {
		if d != "" {
			s.known[d] = true
		}
	}
	return ""
}

// Scan reads the log r line by line and calls fn with every line that is
// whole, is an event (ParseLine), continues the chain (the first line's
// prev is null, every other's is the LineDigest of the line before) and
// keeps the log in order (time never goes backwards; an event's lockBefore
// is a lock an earlier event names, unless it is the first event about its
// server). It stops at the first line that is not, with a *LineError
// naming it (wrapping ErrMalformed, ErrChain, ErrOrder or ErrTorn), or at
// the first error of fn or r. An empty log is a valid log with no events.
func Scan(r io.Reader, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		prev   string
		offset int64
		buf    []byte
		seq    sequence
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
					"%d bytes without a newline (a writer was killed mid-write); the log is whole up to byte %d: 'mcpsign audit repair' cuts the rest (or gives a whole event its newline back)", len(buf), offset)}
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
		if why := seq.check(n, ev); why != "" {
			return &LineError{Line: n, Offset: offset, Err: ErrOrder, Reason: why}
		}
		prev = LineDigest(line)
		if err := fn(Record{Line: n, Offset: offset, Event: ev, Digest: prev, Raw: line}); err != nil {
			return err
		}
		offset += int64(len(buf))
	}
}

// Anchor is a point the log must reach (docs/AUDIT.md "Anchors"): the head
// a lock recorded when it was written (pin.Lock.AuditHead), or a head kept
// elsewhere.
type Anchor struct {
	// Name says where the anchor comes from, in errors ("the lock
	// notes.lock", "the expected head").
	Name string
	// Head must be the LineDigest of a line of the log, or EmptyHead (the
	// log before its first line). Any line may follow it.
	Head string
	// LockDigest, when set, is the lockDigest of the lock that recorded
	// Head: the line right after Head must be the approval that wrote it
	// (approved or rolled-forward, its lockAfter LockDigest), and no later
	// approval may replace it (an approval whose lockBefore is LockDigest
	// and whose lockAfter is another lock): then the lock given is not the
	// one the log holds in force.
	LockDigest string
}

// Summary is what Check read.
type Summary struct {
	// Events is the number of events.
	Events int
	// Head is the LineDigest of the last line, EmptyHead for an empty log.
	Head string
}

// CheckOptions configure Check.
type CheckOptions struct {
	// Anchors are checked after the whole log verifies; an anchor the log
	// does not reach is an error wrapping ErrAnchor.
	Anchors []Anchor
}

// Verify checks the whole log at path (Scan) and returns the number of
// events it holds; a broken log is a *LineError naming the first bad line.
// Check also checks anchors.
func Verify(path string) (int, error) {
	sum, err := Check(path, CheckOptions{})
	return sum.Events, err
}

// Check checks the whole log at path (Scan) and the anchors of opts; a
// broken log is a *LineError naming the first bad line, an anchor it does
// not reach an error wrapping ErrAnchor. The log is not opened through a
// symbolic link (nofollow.ErrSymlink).
func Check(path string, opts CheckOptions) (Summary, error) {
	f, err := nofollow.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return Summary{}, err
	}
	defer f.Close()
	type found struct {
		line int
		next *Event // the line after it, nil when it is the last
	}
	heads := map[string]*found{}
	for _, a := range opts.Anchors {
		heads[a.Head] = nil
	}
	var replaced map[string]int // a lock digest: the line that replaced it
	sum := Summary{Head: EmptyHead}
	var last *found
	if _, ok := heads[EmptyHead]; ok {
		last = &found{line: 0}
		heads[EmptyHead] = last
	}
	err = Scan(f, func(r Record) error {
		sum.Events++
		sum.Head = r.Digest
		if last != nil && last.next == nil {
			last.next = r.Event
		}
		last = nil
		if _, ok := heads[r.Digest]; ok && heads[r.Digest] == nil {
			last = &found{line: r.Line}
			heads[r.Digest] = last
		}
		if e := r.Event; e.Event.approval() && e.LockBefore != "" && e.LockBefore != e.LockAfter {
			if replaced == nil {
				replaced = map[string]int{}
			}
			if _, ok := replaced[e.LockBefore]; !ok {
				replaced[e.LockBefore] = r.Line
			}
		}
		return nil
	})
	if err != nil {
		return sum, err
	}
	for _, a := range opts.Anchors {
		at := heads[a.Head]
		switch {
		case at == nil:
			return sum, fmt.Errorf("%w: %s records the head %s, which is no line of the log: the log was cut or rewritten after it (or is another log)", ErrAnchor, a.Name, a.Head)
		case a.LockDigest == "":
		case at.next == nil:
			return sum, fmt.Errorf("%w: %s records the head %s (line %d, the last), but no line follows it: the approval of that lock (lockAfter %s) was cut, with everything after it", ErrAnchor, a.Name, a.Head, at.line, a.LockDigest)
		case !at.next.Event.approval() || at.next.LockAfter != a.LockDigest:
			return sum, fmt.Errorf("%w: %s records the head %s (line %d), but the line after it is not the approval of that lock (lockAfter %s): the approval was removed, or the lock was not written by a writer of this log", ErrAnchor, a.Name, a.Head, at.line, a.LockDigest)
		}
		if n, ok := replaced[a.LockDigest]; ok && a.LockDigest != "" {
			return sum, fmt.Errorf("%w: line %d approves a lock that replaced %s (its lockBefore is that lock's lockDigest %s): the lock given is an older copy, or a writer stopped after recording the approval and before writing its lock", ErrAnchor, n, a.Name, a.LockDigest)
		}
	}
	return sum, nil
}

// CheckWritable reports whether Append could write the log at path, before
// a command writes anything else (docs/AUDIT.md "Writing"): neither the log
// nor its sidecar is a symbolic link, a directory or another file that is
// not regular (a FIFO), the log (when it exists) opens for appending and
// its last line can be continued, or (when it does not) its directory
// exists and a file can be created there.
// Nothing is written to the log.
func CheckWritable(path string) error {
	for _, p := range []string{path, path + FileLockSuffix} {
		if err := nofollow.Check(p); err != nil {
			return err
		}
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory", p)
		} else if err == nil && !fi.Mode().IsRegular() {
			return &nofollow.NotRegularError{Path: p, Mode: fi.Mode()}
		}
	}
	f, err := nofollow.Open(path, os.O_RDWR|os.O_APPEND, 0)
	if err == nil {
		defer f.Close()
		if _, _, err := lastLine(f); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("audit log %s: cannot be created in %s: %w", path, dir, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// Append adds e as the log's last line (AppendAt).
func Append(ctx context.Context, path string, e *Event) error {
	return AppendAt(ctx, path, func(string) (*Event, error) { return e, nil })
}

// AppendAt adds the event build returns as the log's last line, creating
// the log (mode 0644) when it is missing. build gets the log's head (the
// LineDigest of its last line, EmptyHead when it is empty), which the event
// then follows: a lock writer records it in the lock (docs/AUDIT.md
// "Anchors"). An error of build writes nothing.
//
// It holds an exclusive flock on PATH.lock (waiting as long as ctx allows,
// or filelock.DefaultWait) from reading the last line to the fsync, so that
// concurrent writers, in any process, interleave whole lines and each
// continues the chain. It refuses, writing nothing, a log whose last line is
// not whole (ErrTorn) or is not an event (ErrMalformed): its chain cannot be
// continued. Only the last line is read: Verify checks the rest. The event's
// Prev is set to the digest of that line, and its Time to that line's time
// when it is earlier (a clock set back never writes time backwards). Neither
// the log nor the sidecar is opened through a symbolic link.
func AppendAt(ctx context.Context, path string, build func(head string) (*Event, error)) error {
	return filelock.WithFile(ctx, path+FileLockSuffix, "another mcpsign is writing the audit log", func() error {
		f, err := nofollow.Open(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		prev, last, err := lastLine(f)
		if err != nil {
			return fmt.Errorf("audit log %s: not appending: %w", path, err)
		}
		head := prev
		if head == "" {
			head = EmptyHead
		}
		e, err := build(head)
		if err != nil {
			return err
		}
		e.Prev = prev
		if last != nil && e.Time.Before(last.Time) {
			e.Time = last.Time
		}
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

// lastLine returns the LineDigest of f's last line and its event ("" and
// nil when f is empty), after checking that the line is whole and is an
// event.
func lastLine(f *os.File) (string, *Event, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, &nofollow.NotRegularError{Path: f.Name(), Mode: fi.Mode()}
	}
	size := fi.Size()
	if size == 0 {
		return "", nil, nil
	}
	n := min(size, int64(MaxLineBytes)+1)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, size-n); err != nil {
		return "", nil, err
	}
	if tail[len(tail)-1] != '\n' {
		// Named at the byte it starts, as Verify names it: one line, one
		// offset.
		start := size - n + int64(bytes.LastIndexByte(tail, '\n')+1)
		return "", nil, &LineError{Line: 0, Offset: start, Err: ErrTorn, Reason: "a writer was killed mid-write: run 'mcpsign audit verify' to see which line, 'mcpsign audit repair' to repair it"}
	}
	body := tail[:len(tail)-1]
	start := bytes.LastIndexByte(body, '\n') + 1
	if start == 0 && n < size {
		return "", nil, &LineError{Line: 0, Offset: size - n, Err: ErrMalformed, Reason: "the last line is too long"}
	}
	line := body[start:]
	ev, err := parseLine(line)
	if err != nil {
		return "", nil, &LineError{Line: 0, Offset: size - n + int64(start), Err: ErrMalformed, Reason: "the last line is not an event (" + err.Error() + "): run 'mcpsign audit verify'"}
	}
	return LineDigest(line), ev, nil
}

// Repaired is what Repair did.
type Repaired struct {
	// Cut is the number of bytes cut: a partial last line that is not an
	// event.
	Cut int64
	// Newline is set when the last line was a whole event continuing the
	// chain that had only lost its newline: the newline was written back,
	// nothing was cut.
	Newline bool
}

// Repair mends the last line a killed writer left, so that writers can go
// on: a last line without its newline that reads as an event continuing
// the chain (and in order) gets its newline back; any other partial last
// line is cut at the end of the last whole line. It holds the writers' file
// lock and checks the log (Scan) first, and changes it only when every line
// before the last verifies; the zero Repaired means the log was whole. Any
// other break is refused (the *LineError of Scan): an edited or removed
// line is evidence, and Repair never rewrites it. Neither the log nor its
// sidecar is opened through a symbolic link.
func Repair(ctx context.Context, path string) (Repaired, error) {
	var done Repaired
	err := filelock.WithFile(ctx, path+FileLockSuffix, "another mcpsign is writing the audit log", func() error {
		f, err := nofollow.Open(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		var (
			prev string
			seq  sequence
			n    int
		)
		err = Scan(f, func(r Record) error {
			prev, n = r.Digest, r.Line
			seq.check(r.Line, r.Event)
			return nil
		})
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
		rest := make([]byte, fi.Size()-le.Offset)
		if _, err := f.ReadAt(rest, le.Offset); err != nil {
			return err
		}
		if ev, err := parseLine(rest); err == nil && ev.Prev == prev && seq.check(n+1, ev) == "" {
			if _, err := f.WriteAt([]byte("\n"), fi.Size()); err != nil {
				return err
			}
			done.Newline = true
		} else {
			if err := f.Truncate(le.Offset); err != nil {
				return err
			}
			done.Cut = fi.Size() - le.Offset
		}
		if err := f.Sync(); err != nil {
			return err
		}
		return f.Close()
	})
	return done, err
}
