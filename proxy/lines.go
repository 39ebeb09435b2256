package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrMessageTooLarge is the error of a message (one line) longer than
// Options.MaxMessageBytes.
var ErrMessageTooLarge = errors.New("message too large")

// lineReader reads newline-delimited messages, each capped in size. A line
// is returned with its line end, exactly as read, so that it can be relayed
// byte for byte; the last line of a stream may lack one.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	size := 64 << 10
	if max < size {
		size = max + 2
	}
	return &lineReader{r: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next line (a fresh slice the caller owns). At the end of
// the stream it returns io.EOF; a line longer than max, not counting its
// line end ("\n" or "\r\n"), is ErrMessageTooLarge.
func (l *lineReader) next() ([]byte, error) {
	frag, err := l.r.ReadSlice('\n')
	if err == nil {
		if len(content(frag)) > l.max {
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
	if len(content(line)) > l.max {
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

func (l *lineReader) tooLarge() error {
	return fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, l.max)
}

// content returns a line without its line end.
func content(line []byte) []byte {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	}
	return line[:n]
}
