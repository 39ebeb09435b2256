package mcpwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrMessageTooLarge is the error of a message longer than the cap its
// reader was given.
var ErrMessageTooLarge = errors.New("message too large")

// LineReader reads newline-delimited messages, each capped in size. A line
// is returned with its line end, exactly as read, so that it can be relayed
// byte for byte; the last line of a stream may lack one.
type LineReader struct {
	r   *bufio.Reader
	max int
}

// readBufferBytes is the buffer of a LineReader and an EventReader: a
// message longer than it is read in pieces and joined. Small, because a
// reader is held for as long as its stream is open, and 'mcpsign serve'
// holds several for every idle session (docs/PERFORMANCE.md, "HTTP
// front"); most messages fit.
const readBufferBytes = 4 << 10

// streamBufferBytes is the buffer of the event reader of a body without a
// cap (ResponseOptions.MaxBodyBytes < 0: a GET stream, open for as long as
// its session and idle most of that time, carrying few messages, the
// server's own): an event longer than it is read in pieces too.
const streamBufferBytes = 512

// NewLineReader reads newline-delimited messages of at most max bytes
// each from r.
func NewLineReader(r io.Reader, max int) *LineReader {
	size := readBufferBytes
	if max < size {
		size = max + 2
	}
	return &LineReader{r: bufio.NewReaderSize(r, size), max: max}
}

// Next returns the next line (a fresh slice the caller owns). At the end of
// the stream it returns io.EOF; a line longer than max, not counting its
// line end ("\n" or "\r\n"), is ErrMessageTooLarge.
func (l *LineReader) Next() ([]byte, error) {
	frag, err := l.r.ReadSlice('\n')
	if err == nil {
		if len(Content(frag)) > l.max {
			return nil, l.tooLarge()
		}
		return bytes.Clone(frag), nil
	}
	var line []byte
	for errors.Is(err, bufio.ErrBufferFull) {
		line = append(line, frag...)
		if len(line) > l.max+1 {
			return nil, l.tooLarge()
		}
		frag, err = l.r.ReadSlice('\n')
	}
	line = append(line, frag...)
	if len(Content(line)) > l.max {
		return nil, l.tooLarge()
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return line, nil // a last line without a newline
		}
		return nil, err
	}
	return line, nil
}

func (l *LineReader) tooLarge() error {
	return fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, l.max)
}

// Content returns a line without its line end ("\n" or "\r\n").
func Content(line []byte) []byte {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	}
	return line[:n]
}

// ErrFraming is the error of a line that holds more than one message
// surrounded by the line end: go-sdk reads a stdio stream with a JSON
// decoder and refuses a message followed by anything but "\r" or "\n",
// while the TypeScript SDK trims the line; a line the two read differently
// is not relayed (docs/PROXY.md).
var ErrFraming = errors.New("white space after the message on its line")

// CheckFraming checks the framing of one stdio line as the strictest
// official client reads it: nothing may follow the message on its line but
// the line end. Leading white space is read alike by both and allowed.
// The error wraps ErrProtocol and ErrFraming.
func CheckFraming(line []byte) error {
	c := Content(line)
	if n := len(c); n > 0 {
		switch c[n-1] {
		case ' ', '\t', '\r':
			return fmt.Errorf("%w: %w", ErrProtocol, ErrFraming)
		}
	}
	return nil
}
