package mcpwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ErrEventStream marks a server-sent event stream that the official clients
// could read differently, or that no reader would take for one whole
// answer: a lone CR, a byte-order mark, an unknown field, an event name
// other than "message", a stream that ends inside an event
// (docs/REMOTE.md, "Reading Streamable HTTP"). An error wrapping it also
// wraps ErrProtocol.
var ErrEventStream = errors.New("unreadable event stream")

// EventStreamError is a violation of the strict event-stream rules, at a
// line of the stream (from 1).
type EventStreamError struct {
	Line   int
	Reason string
}

func (e *EventStreamError) Error() string {
	return fmt.Sprintf("event stream line %d: %s", e.Line, e.Reason)
}

// Unwrap makes the error match both ErrProtocol and ErrEventStream.
func (e *EventStreamError) Unwrap() []error { return []error{ErrProtocol, ErrEventStream} }

// Event is one server-sent event that carries a message.
type Event struct {
	// ID is the value of the event's id field, "" if it has none (or an
	// empty one). It is only ever printable ASCII without leading or
	// trailing space.
	ID string
	// Data is the event's data lines joined by "\n", as every official
	// client reads them: the JSON text of one message, not yet checked
	// (see [StreamCheck]). It is never empty.
	Data []byte
}

// EventReader decodes a text/event-stream body strictly: it returns only
// events that every official client (the TypeScript SDK through
// eventsource-parser, go-sdk) reads alike, and fails on anything they could
// read differently. The rules (docs/REMOTE.md, "Reading Streamable HTTP"):
//
//   - lines end in "\n" or "\r\n"; a CR anywhere else (a lone CR, which
//     the SSE standard and the TypeScript SDK take for a line end and
//     go-sdk for part of the line) is refused, and so is a last line
//     without its line end;
//   - no byte-order mark at the start (the TypeScript SDK drops it, go-sdk
//     reads it as part of the first field name);
//   - every line is a comment (":" first) or a field "name:value" whose
//     name is exactly data, event, id or retry; a line without a colon
//     and any other field name are refused;
//   - the value is what follows the colon less one leading space; an event
//     name must be exactly "message" (go-sdk trims the name, the
//     TypeScript SDK does not), an id printable ASCII without leading or
//     trailing space and without NUL, a retry only ASCII digits;
//   - an event without data, or whose data is empty (a priming event, a
//     close event), carries no message and is skipped, whatever its name;
//     but an event with an id and no data line at all is refused (go-sdk
//     would resume the stream after that id, the TypeScript SDK never
//     sees it: [EventReader.LastID]);
//   - the stream must end between events (after a blank line): go-sdk
//     dispatches an event cut off by the end of the stream, the TypeScript
//     SDK drops it.
//
// Whether the data is one message that reads alike is [StreamCheck]'s
// business: white space that go-sdk trims from a data line and the
// TypeScript SDK keeps is JSON white space in a message that parses, and
// anything else is refused when the data is parsed.
//
// An EventReader is not safe for concurrent use.
type EventReader struct {
	r    *bufio.Reader
	max  int
	line int   // lines read
	eof  bool  // the stream ended cleanly
	err  error // the first error, returned again

	lastID string // the id both clients resume after (LastID)
	pooled bool   // r is from readers (release)
}

// LastID returns the id of the last event read so far that had an id and
// a data line (with or without a message): the id after which both
// official clients resume a stream that ended (their Last-Event-ID), ""
// if none. eventsource-parser dispatches no event without a data line, so
// the TypeScript SDK never sees the id of one, where go-sdk does: such an
// event is refused by Next.
func (er *EventReader) LastID() string { return er.lastID }

// NewEventReader reads events of at most maxEventBytes bytes each (all
// the lines of the event, line ends included) from r. A larger event is an
// error wrapping ErrMessageTooLarge.
func NewEventReader(r io.Reader, maxEventBytes int) *EventReader {
	return newEventReaderSize(r, maxEventBytes, readBufferBytes)
}

// newEventReaderSize is NewEventReader with a read buffer of size bytes
// (at most maxEventBytes+2, at least 16).
func newEventReaderSize(r io.Reader, maxEventBytes, size int) *EventReader {
	if maxEventBytes+2 < size {
		size = maxEventBytes + 2
	}
	if size < 16 {
		size = 16
	}
	return &EventReader{r: bufio.NewReaderSize(r, size), max: maxEventBytes}
}

// newPooledEventReader is newEventReaderSize with a read buffer from
// readers when it is of their size: its caller calls release once done.
func newPooledEventReader(r io.Reader, maxEventBytes, size int) *EventReader {
	if maxEventBytes+2 < size || size != readBufferBytes {
		return newEventReaderSize(r, maxEventBytes, size)
	}
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return &EventReader{r: br, max: maxEventBytes, pooled: true}
}

// readers are the read buffers of event readers of readBufferBytes, which
// ReadResponse takes for each answer stream and gives back when the stream
// ended (an answer a second: no new 4 KiB buffer each; docs/PERFORMANCE.md,
// "HTTP front"). What Next returns never points into them (readLine
// copies).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferBytes) }}

// release gives er's read buffer back for another reader; er is not used
// again.
func (er *EventReader) release() {
	if er.pooled {
		er.pooled = false
		er.r.Reset(nil)
		readers.Put(er.r)
		er.r = nil
		if er.err == nil {
			er.err = errReleased
		}
	}
}

// errReleased is what Next returns after release.
var errReleased = errors.New("the event reader was released")

// Next returns the next event that carries a message. At the end of a
// stream that ends between events it returns io.EOF. A stream that breaks
// the rules is an *EventStreamError (wrapping ErrEventStream and
// ErrProtocol); an event over the size cap wraps ErrMessageTooLarge; an
// error of the underlying reader is returned wrapped. After an error, Next
// returns the same error again.
func (er *EventReader) Next() (Event, error) {
	if er.err != nil {
		return Event{}, er.err
	}
	ev, err := er.next()
	if err != nil {
		er.err = err
	}
	return ev, err
}

func (er *EventReader) next() (Event, error) {
	var (
		ev      Event
		data    []byte
		hasData bool
		badName string // an event name other than "message"
		named   bool
		fields  bool // a field was read since the last blank line
		size    int  // bytes of the event so far
	)
	for {
		if er.eof {
			return Event{}, io.EOF
		}
		line, err := er.readLine(er.max - size)
		if err != nil {
			return Event{}, err
		}
		if line == nil { // the end of the stream
			if fields {
				return Event{}, er.fail("the stream ends inside an event (no blank line after it)")
			}
			er.eof = true
			return Event{}, io.EOF
		}
		er.line++
		size += len(line)
		content := line[:len(line)-1]
		if n := len(content); n > 0 && content[n-1] == '\r' {
			content = content[:n-1]
		}
		if er.line == 1 && bytes.HasPrefix(content, []byte("\xef\xbb\xbf")) {
			return Event{}, er.fail("a byte-order mark before the first event (the TypeScript SDK drops it, go-sdk reads it as part of a field name)")
		}
		if bytes.IndexByte(content, '\r') >= 0 {
			return Event{}, er.fail("a CR that is not part of a CRLF line end (the TypeScript SDK ends the line there, go-sdk does not)")
		}
		if len(content) == 0 { // a blank line: dispatch
			if ev.ID != "" && !hasData {
				return Event{}, er.fail("an event with an id and no data line (go-sdk resumes the stream after its id, the TypeScript SDK never sees it)")
			}
			if ev.ID != "" {
				er.lastID = ev.ID
			}
			if hasData && len(data) > 0 {
				if named && badName != "" {
					return Event{}, er.fail("an event named " + textsafe.RawQuote(textsafe.Cut(badName, 40)) + ", not \"message\" (go-sdk trims the name, the TypeScript SDK does not)")
				}
				ev.Data = data
				return ev, nil
			}
			// No message: a priming or close event, or comments only.
			ev, data, hasData, badName, named, fields, size = Event{}, nil, false, "", false, false, 0
			continue
		}
		if content[0] == ':' { // a comment
			continue
		}
		name, value, ok := bytes.Cut(content, []byte(":"))
		if !ok {
			return Event{}, er.fail("a line that is neither a field nor a comment (no colon)")
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		fields = true
		switch string(name) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "event":
			named = true
			if string(value) != "message" && badName == "" {
				badName = string(value)
				if badName == "" {
					badName = "(empty)"
				}
			}
		case "id":
			if len(value) > 0 && !printableToken(value) {
				return Event{}, er.fail("an id that is not printable ASCII without surrounding space")
			}
			ev.ID = string(value)
		case "retry":
			if len(value) == 0 || len(value) > 10 || !allDigits(value) {
				return Event{}, er.fail("a retry that is not a number of milliseconds")
			}
		default:
			return Event{}, er.fail("an unknown field " + textsafe.RawQuote(textsafe.Cut(string(name), 40)) + " (only data, event, id and retry are read)")
		}
	}
}

// readLine returns the next line with its "\n", or nil at the end of the
// stream. budget is what the event may still hold.
func (er *EventReader) readLine(budget int) ([]byte, error) {
	var line []byte
	for {
		frag, err := er.r.ReadSlice('\n')
		if len(line)+len(frag) > budget {
			return nil, &eventTooLarge{er.max}
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				er.line++
				return nil, er.fail("the stream ends inside a line (no line end)")
			}
			return nil, nil
		default:
			return nil, fmt.Errorf("reading the event stream: %w", err)
		}
	}
}

// eventTooLarge is an event over the EventReader's cap.
type eventTooLarge struct{ max int }

func (e *eventTooLarge) Error() string {
	return fmt.Sprintf("%v: an event has more than %d bytes", ErrMessageTooLarge, e.max)
}

func (e *eventTooLarge) Unwrap() error { return ErrMessageTooLarge }

func (er *EventReader) fail(reason string) error {
	return &EventStreamError{Line: er.line, Reason: reason}
}

// printableToken reports whether b is non-empty printable ASCII with no
// space at either end.
func printableToken(b []byte) bool {
	if len(b) == 0 || b[0] == ' ' || b[len(b)-1] == ' ' {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
