package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEventReader checks the strict event-stream reader against models of
// the two official readers (eventsource-parser 3.1.1 under the TypeScript
// SDK's StreamableHTTPClientTransport, and go-sdk v1.8.0's scanEvents with
// its client's filter): whenever EventReader reads a stream to its end,
// the TypeScript SDK takes exactly the same events with the same data, and
// go-sdk the same events (less those whose data is only white space, which
// no message is) with data that means the same JSON. Seeds: the four
// attacks, legal forms, and testdata/fuzz/FuzzEventReader.
func FuzzEventReader(f *testing.F) {
	for _, s := range sseAttacks {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		"data: " + sseAnswer + "\n\n",
		": hi\r\nevent: message\r\nid: 7\r\nretry: 1000\r\ndata: " + sseAnswer + "\r\n\r\n",
		"id: p1\ndata: \n\nevent: close\nretry: 5\ndata: \n\n",
		"data: {\"a\":\ndata: 1}\n\n",
		"data:  {\"a\":1} \t\n\n",
		"\u00ef\u00bb\u00bfdata: x\n\n",
		"data: x\u00a0\n\n",
		"data: x\n",
		"event:  message\ndata: 1\n\n",
		"data\n\n",
		"data: 1\r\r\n\n",
		"id: g-1\nretry: 1\n\n",
		"id: g-1\ndata: \n\nid: g-2\ndata: 1\n\nid:\ndata: 2\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		er := NewEventReader(bytes.NewReader(stream), 1<<16)
		var got []Event
		var err error
		for {
			var ev Event
			if ev, err = er.Next(); err != nil {
				break
			}
			if len(ev.Data) == 0 {
				t.Fatal("an event without data")
			}
			got = append(got, ev)
		}
		if !errors.Is(err, io.EOF) {
			if !errors.Is(err, ErrEventStream) && !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("error %v wraps neither ErrEventStream nor ErrMessageTooLarge", err)
			}
			return
		}
		if !utf8.Valid(stream) {
			return // the TypeScript SDK decodes first; the models skip it
		}
		ts, tsID := tsModel(string(stream))
		if len(ts) != len(got) {
			t.Fatalf("read %d events, the TypeScript SDK %d (%q)", len(got), len(ts), ts)
		}
		var want []string
		for i, ev := range got {
			if ts[i] != string(ev.Data) {
				t.Fatalf("event %d: data %q, the TypeScript SDK %q", i, ev.Data, ts[i])
			}
			if len(bytes.TrimSpace(ev.Data)) > 0 {
				want = append(want, string(ev.Data))
			}
		}
		all, goID := goModel(string(stream))
		var gosdk []string // white space only is no message to either client
		for _, d := range all {
			if strings.TrimSpace(d) != "" {
				gosdk = append(gosdk, d)
			}
		}
		if tsID != goID || er.LastID() != tsID {
			t.Fatalf("resumes after id %q, the TypeScript SDK after %q, go-sdk after %q", er.LastID(), tsID, goID)
		}
		if len(gosdk) != len(want) {
			t.Fatalf("read %d events with content, go-sdk %d (%q)", len(want), len(gosdk), gosdk)
		}
		for i := range want {
			var a, b any
			errA := json.Unmarshal([]byte(want[i]), &a)
			if errA != nil {
				continue // no JSON value: StreamCheck refuses it (go-sdk may trim a form feed off)
			}
			errB := json.Unmarshal([]byte(gosdk[i]), &b)
			if (errA == nil) != (errB == nil) || errA == nil && !reflect.DeepEqual(a, b) {
				t.Fatalf("event %d: data %q, go-sdk %q: not the same JSON", i, want[i], gosdk[i])
			}
		}
	})
}

// tsModel returns the data of the events the TypeScript SDK takes as
// messages from a stream (already valid UTF-8), as eventsource-parser
// 3.1.1 splits it: TextDecoderStream drops a leading U+FEFF, the parser
// drops a leading "\u00ef\u00bb\u00bf", lines end at CRLF, CR or LF, a line
// without its end at the end of the stream is never read, and an event is
// taken when it has data and no name or the name "message". The id it
// resumes after is that of the last event dispatched (one with a data
// line) that had a non-empty id without NUL.
func tsModel(s string) (out []string, lastID string) {
	s = strings.TrimPrefix(s, "\ufeff")
	s = strings.TrimPrefix(s, "\u00ef\u00bb\u00bf")
	var data, event, id string
	lines := 0
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return out, lastID
		}
		line := s[:i]
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			s = s[i+2:]
		} else {
			if s[i] == '\r' && i+1 == len(s) {
				return out, lastID // a CR last: the parser waits for what follows
			}
			s = s[i+1:]
		}
		if line == "" {
			if lines > 0 && data != "" && (event == "" || event == "message") {
				out = append(out, data)
			}
			if lines > 0 && id != "" {
				lastID = id
			}
			data, event, id, lines = "", "", "", 0
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "data":
			if lines > 0 {
				data += "\n"
			}
			data += value
			lines++
		case "event":
			event = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
}

// goModel returns the data of the events go-sdk's client takes as messages
// from a stream, as scanEvents reads it: lines end at LF with every CR and
// LF trimmed from their end, a last line without its end is read, and at
// the end of the stream the event read so far is dispatched; the client
// takes an event with non-empty data and no name or the name "message".
// A line without a colon ends the stream with an error (what came before
// was taken). The id it resumes after is the last non-empty id (trimmed)
// of an event with any field.
func goModel(s string) (out []string, lastID string) {
	var data *strings.Builder
	name, id := "", ""
	dispatch := func() {
		if data != nil && data.Len() > 0 && (name == "" || name == "message") {
			out = append(out, data.String())
		}
		if id != "" {
			lastID = id
		}
		data, name, id = nil, "", ""
	}
	for len(s) > 0 {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			dispatch()
			continue
		}
		before, after, found := strings.Cut(line, ":")
		if !found {
			return out, lastID
		}
		switch before {
		case "event":
			name = strings.TrimSpace(after)
		case "id":
			id = strings.TrimSpace(after)
		case "data":
			if data == nil {
				data = &strings.Builder{}
			} else {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimSpace(after))
		}
	}
	dispatch()
	return out, lastID
}

// TestEventReaderModels checks the models on the attacks: each splits
// the two official readers, which is why EventReader refuses it.
func TestEventReaderModels(t *testing.T) {
	t.Parallel()
	for name, s := range sseAttacks {
		ts, _ := tsModel(s)
		gosdk, _ := goModel(s)
		if reflect.DeepEqual(ts, gosdk) {
			t.Errorf("%s: both readers take %q", name, ts)
		}
	}
}

// FuzzEventReaderBufferSize: what an EventReader reads does not depend on
// its buffer: a GET stream's reader (streamBufferBytes), the smallest
// (16 bytes) and the default (readBufferBytes) take the same events, or
// fail the same way, for any stream and event cap.
func FuzzEventReaderBufferSize(f *testing.F) {
	for _, s := range sseAttacks {
		f.Add([]byte(s), uint16(1<<12))
	}
	f.Add([]byte("data: "+sseAnswer+"\n\n"), uint16(40))
	f.Add([]byte("data: "+strings.Repeat("x", 1500)+"\r\ndata: y\r\n\r\nid: 2\ndata: z\n\n"), uint16(2000))
	f.Add([]byte(": "+strings.Repeat("c", 700)+"\ndata: 1\n\n"), uint16(64))
	f.Fuzz(func(t *testing.T, stream []byte, capBytes uint16) {
		max := int(capBytes) + 1
		type result struct {
			events   []Event
			eof      bool
			tooLarge bool
		}
		read := func(size int) result {
			er := newEventReaderSize(bytes.NewReader(stream), max, size)
			var r result
			for {
				ev, err := er.Next()
				if err != nil {
					r.eof = errors.Is(err, io.EOF)
					r.tooLarge = errors.Is(err, ErrMessageTooLarge)
					return r
				}
				r.events = append(r.events, ev)
			}
		}
		want := read(readBufferBytes)
		for _, size := range []int{16, streamBufferBytes} {
			if got := read(size); !reflect.DeepEqual(got, want) {
				t.Fatalf("a %d-byte buffer read %+v, a %d-byte one %+v", size, got, readBufferBytes, want)
			}
		}
	})
}
