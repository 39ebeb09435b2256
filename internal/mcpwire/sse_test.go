package mcpwire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	sseAnswer = `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`
	sseNote   = `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`
	ssePing   = `{"jsonrpc":"2.0","id":"s1","method":"ping"}`
)

// The four attacks the strict reader exists for, as a client sees them.
var sseAttacks = map[string]string{
	"lone CR in tools/list": "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[\r{\"name\":\"good\"}],\"x\":[\ndata: {\"name\":\"evil\"}]}}\n\n",
	"lone CR in initialize": "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"instructions\":\"good\",\"x\":\r\"a\",\"instructions\":\"evil\"}}\n\n",
	"byte-order mark":       "\xef\xbb\xbfdata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"evil\"}]}}\n\ndata: " + sseAnswer + "\n\n",
	"event name with space": "event: message \ndata: " + sseAnswer + "\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"evil\"}]}}\n\n",
}

func TestEventReader(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   string
		want []Event // the events read before the error (or EOF)
		err  string  // "" for a clean end
	}{
		{name: "plain", in: "data: " + sseAnswer + "\n\n", want: []Event{{Data: []byte(sseAnswer)}}},
		{name: "CRLF, id, retry, named, comment", in: ": hi\r\nevent: message\r\nid: 7\r\nretry: 1000\r\ndata: " + sseAnswer + "\r\n\r\n",
			want: []Event{{ID: "7", Data: []byte(sseAnswer)}}},
		{name: "no space after the colon", in: "data:" + sseAnswer + "\n\n", want: []Event{{Data: []byte(sseAnswer)}}},
		{name: "data over two lines", in: "data: {\"a\":\ndata: 1}\n\n", want: []Event{{Data: []byte("{\"a\":\n1}")}}},
		{name: "priming and close events skipped", in: "id: p1\ndata: \n\nevent: close\nretry: 5\ndata: \n\n: keepalive\n\ndata: x\n\n",
			want: []Event{{Data: []byte("x")}}},
		{name: "empty stream", in: ""},
		{name: "empty id", in: "id:\ndata: x\n\n", want: []Event{{Data: []byte("x")}}},
		{name: "lone CR", in: sseAttacks["lone CR in tools/list"], err: "CR that is not part of a CRLF"},
		{name: "CR CR LF", in: "data: x\r\r\n\n", err: "CR that is not part of a CRLF"},
		{name: "CR first on a line", in: "data: x\n\rdata: y\n\n", err: "CR that is not part of a CRLF"},
		{name: "a lone CR line", in: "data: x\n\r\r\n\n", err: "CR that is not part of a CRLF"},
		{name: "BOM", in: sseAttacks["byte-order mark"], err: "byte-order mark"},
		{name: "Latin-1 BOM", in: "\u00ef\u00bb\u00bfdata: x\n\n", err: "unknown field"},
		{name: "event name with trailing space", in: sseAttacks["event name with space"], err: `named "message "`},
		{name: "event name two spaces", in: "event:  message\ndata: x\n\n", err: `named " message"`},
		{name: "empty event name", in: "event:\ndata: x\n\n", err: `named "(empty)"`},
		{name: "other event name", in: "event: other\ndata: x\n\ndata: y\n\n", err: `named "other"`},
		{name: "unknown field", in: "Data: x\n\n", err: `unknown field "Data"`},
		{name: "no colon", in: "data\n\n", err: "no colon"},
		{name: "NUL in id", in: "id: a\x00b\ndata: x\n\n", err: "id that is not printable"},
		{name: "id with trailing space", in: "id: a \ndata: x\n\n", err: "id that is not printable"},
		{name: "id without a data line", in: "id: g-1\n\ndata: x\n\n", err: "an id and no data line"},
		{name: "id and retry without a data line", in: "retry: 1\nid: g-1\n\n", err: "an id and no data line"},
		{name: "bad retry", in: "retry: 1.5\ndata: x\n\n", err: "retry"},
		{name: "cut off event", in: "data: x\n", err: "ends inside an event"},
		{name: "cut off line", in: "data: x\n\ndata: y", want: []Event{{Data: []byte("x")}}, err: "line 3: the stream ends inside a line"},
		{name: "id with an inner space", in: "id: a b\ndata: x\n\n", want: []Event{{ID: "a b", Data: []byte("x")}}},
		{name: "id of every printable byte", in: "id: !~\ndata: x\n\n", want: []Event{{ID: "!~", Data: []byte("x")}}},
		{name: "DEL in id", in: "id: a\x7fb\ndata: x\n\n", err: "id that is not printable"},
		{name: "retry 0 and 9", in: "retry: 09\ndata: x\n\n", want: []Event{{Data: []byte("x")}}},
		{name: "retry of ten digits", in: "retry: 9999999999\ndata: x\n\n", want: []Event{{Data: []byte("x")}}},
		{name: "retry of eleven digits", in: "retry: 99999999999\ndata: x\n\n", err: "retry"},
		{name: "retry with a colon", in: "retry: 1:\ndata: x\n\n", err: "retry"},
		{name: "retry with a slash", in: "retry: /1\ndata: x\n\n", err: "retry"},
		{name: "too large", in: "data: " + strings.Repeat("x", 200) + "\n\n", err: "more than 100 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			er := NewEventReader(strings.NewReader(tt.in), 100+len(sseAnswer))
			if tt.name == "too large" {
				er = NewEventReader(strings.NewReader(tt.in), 100)
			}
			var got []Event
			var err error
			for {
				var ev Event
				ev, err = er.Next()
				if err != nil {
					break
				}
				got = append(got, ev)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("read %q, want %q (then %v)", got, tt.want, err)
			}
			for i := range got {
				if got[i].ID != tt.want[i].ID || string(got[i].Data) != string(tt.want[i].Data) {
					t.Errorf("event %d: %q, want %q", i, got[i], tt.want[i])
				}
			}
			if tt.err == "" {
				if err != io.EOF {
					t.Errorf("error %v, want EOF", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if !strings.Contains(tt.err, "more than") && (!errors.Is(err, ErrEventStream) || !errors.Is(err, ErrProtocol)) {
				t.Errorf("error %v does not wrap ErrEventStream and ErrProtocol", err)
			}
			if _, again := er.Next(); again != err {
				t.Errorf("second Next: %v, want the same error", again)
			}
		})
	}
}

func TestStreamCheck(t *testing.T) {
	t.Parallel()
	answer2 := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"evil"}]}}`
	for _, tt := range []struct {
		name string
		get  bool
		msgs []string
		want string // dispositions, r or h, then "." for a clean End
		err  string
		held int
	}{
		{name: "answer", msgs: []string{sseAnswer}, want: "h.", held: 1},
		{name: "notes and ping first", msgs: []string{sseNote, ssePing, sseAnswer, sseNote}, want: "rrhh.", held: 2},
		{name: "second answer", msgs: []string{sseAnswer, answer2}, want: "h", err: "second answer"},
		{name: "request after the answer", msgs: []string{sseAnswer, ssePing}, want: "h", err: "request (ping) after the answer"},
		{name: "loose id", msgs: []string{`{"jsonrpc":"2.0","id":1.0,"result":{}}`}, err: "answers no pending request"},
		{name: "no answer", msgs: []string{sseNote}, want: "r", err: "ended without the answer"},
		{name: "no version", msgs: []string{`{"id":1,"result":{}}`}, err: `without "jsonrpc"`},
		{name: "GET requests and notes", get: true, msgs: []string{ssePing, sseNote}, want: "rr."},
		{name: "GET answer", get: true, msgs: []string{sseAnswer}, err: "answer on a GET stream"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewGetCheck()
			if !tt.get {
				var err error
				if c, err = NewPostCheck([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); err != nil {
					t.Fatal(err)
				}
			}
			var got strings.Builder
			var err error
			for _, m := range tt.msgs {
				var d Disposition
				if d, err = c.Message([]byte(m)); err != nil {
					break
				}
				got.WriteString(d.String()[:1])
			}
			var held [][]byte
			if err == nil {
				if held, err = c.End(); err == nil {
					got.WriteString(".")
				}
			}
			if got.String() != tt.want {
				t.Errorf("dispositions %q, want %q", got.String(), tt.want)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if err != nil && !errors.Is(err, ErrProtocol) {
				t.Errorf("error %v does not wrap ErrProtocol", err)
			}
			if len(held) != tt.held {
				t.Errorf("held %d messages, want %d", len(held), tt.held)
			}
		})
	}
	if _, err := NewPostCheck([]byte(sseNote)); err == nil {
		t.Error("NewPostCheck accepted a notification")
	}
}

func TestReadContentType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		values []string
		want   BodyKind
		err    string
	}{
		{[]string{"application/json"}, BodyJSON, ""},
		{[]string{"text/event-stream"}, BodyEventStream, ""},
		{[]string{"Text/Event-Stream; charset=UTF-8"}, BodyEventStream, ""},
		{[]string{`application/json; charset="utf-8"`}, BodyJSON, ""},
		{nil, 0, "no Content-Type"},
		{[]string{""}, 0, "no Content-Type"},
		{[]string{"application/json", "text/event-stream"}, 0, "more than one"},
		{[]string{"application/json, text/event-stream"}, 0, "joins several"},
		{[]string{"application/json; charset=latin1"}, 0, "charset other than utf-8"},
		{[]string{"application/json; v=1"}, 0, "other than charset"},
		{[]string{`text/plain; a="text/event-stream"`}, 0, "text/plain"},
		{[]string{"text/event-stream; a=b/c"}, 0, "does not parse"},
		{[]string{"application/json;"}, BodyJSON, ""},
	} {
		h := http.Header{}
		for _, v := range tt.values {
			h.Add("Content-Type", v)
		}
		got, err := ReadContentType(h)
		if got != tt.want || tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrContentType)) {
			t.Errorf("%q: %v, %v; want %v, %q", tt.values, got, err, tt.want, tt.err)
		}
	}
}

func TestReadContentTypeEncoding(t *testing.T) {
	t.Parallel()
	h := http.Header{"Content-Type": {"text/event-stream"}, "Content-Encoding": {"br"}}
	if _, err := ReadContentType(h); !errors.Is(err, ErrContentType) || !strings.Contains(err.Error(), "Content-Encoding that was not decoded") {
		t.Errorf("an undecoded Content-Encoding: %v", err)
	}
}

func TestSessionIDs(t *testing.T) {
	t.Parallel()
	var s SessionIDs
	h := func(v ...string) http.Header { return http.Header{"Mcp-Session-Id": v} }
	if err := s.Check(http.Header{}); err != nil || s.ID() != "" {
		t.Fatal(err)
	}
	if err := s.Check(h("abc")); err != nil || s.ID() != "abc" {
		t.Fatal(err)
	}
	for _, bad := range []http.Header{h("abd"), h("abc", "abc"), h("a c"), h("")} {
		if err := s.Check(bad); err == nil || strings.Contains(err.Error(), "ab") {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if err := s.Check(h("abc")); err != nil {
		t.Error(err)
	}
}

// slowBody writes an event stream piece by piece, waiting for the reader.
type slowBody struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func newSlowBody() *slowBody {
	r, w := io.Pipe()
	return &slowBody{r, w}
}

func (b *slowBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *slowBody) Close() error               { return b.r.Close() }

func TestReadResponse(t *testing.T) {
	t.Parallel()
	post := func() *StreamCheck {
		c, err := NewPostCheck([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	read := func(kind BodyKind, body string, o ResponseOptions) (relayed []string, held [][]byte, err error) {
		held, err = ReadResponse(context.Background(), kind, io.NopCloser(strings.NewReader(body)), post(), o, func(m []byte) error {
			relayed = append(relayed, string(m))
			return nil
		})
		return relayed, held, err
	}
	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		relayed, held, err := read(BodyEventStream, "data: "+sseNote+"\n\nid: 1\ndata: "+sseAnswer+"\n\ndata: "+sseNote+"\n\n", ResponseOptions{})
		if err != nil || len(relayed) != 1 || len(held) != 2 || string(held[0]) != sseAnswer {
			t.Fatalf("%q %q %v", relayed, held, err)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		t.Parallel()
		_, held, err := read(BodyJSON, " "+sseAnswer+"\n", ResponseOptions{})
		if err != nil || len(held) != 1 {
			t.Fatalf("%q %v", held, err)
		}
		if _, _, err := read(BodyJSON, "\xef\xbb\xbf"+sseAnswer, ResponseOptions{}); err == nil || !strings.Contains(err.Error(), "byte-order mark") {
			t.Fatal(err)
		}
		if _, _, err := read(BodyJSON, sseAnswer, ResponseOptions{MaxMessageBytes: 10}); !errors.Is(err, ErrMessageTooLarge) {
			t.Fatal(err)
		}
		// The message cap is inclusive.
		if _, held, err := read(BodyJSON, sseAnswer, ResponseOptions{MaxMessageBytes: len(sseAnswer)}); err != nil || len(held) != 1 {
			t.Fatalf("a body of MaxMessageBytes: %q %v", held, err)
		}
		if _, _, err := read(BodyJSON, sseAnswer, ResponseOptions{MaxMessageBytes: len(sseAnswer) - 1}); !errors.Is(err, ErrMessageTooLarge) {
			t.Fatal(err)
		}
	})
	for name, body := range sseAttacks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, held, err := read(BodyEventStream, body, ResponseOptions{})
			if err == nil || held != nil || !errors.Is(err, ErrProtocol) {
				t.Fatalf("held %q, error %v", held, err)
			}
		})
	}
	t.Run("body cap", func(t *testing.T) {
		t.Parallel()
		_, _, err := read(BodyEventStream, strings.Repeat("data: "+sseNote+"\n\n", 100)+"data: "+sseAnswer+"\n\n", ResponseOptions{MaxBodyBytes: 1000})
		if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "the response body has more than 1000 bytes") {
			t.Fatal(err)
		}
		_, _, err = read(BodyEventStream, "data: "+sseAnswer+strings.Repeat(" ", 20000)+"\n\n", ResponseOptions{MaxMessageBytes: 100})
		if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "a message has more than 100 bytes") {
			t.Fatal(err)
		}
	})
	t.Run("an event of a message at the cap", func(t *testing.T) {
		t.Parallel()
		// The event may be EventOverhead bytes longer than its message:
		// an id and a comment beside a message of MaxMessageBytes.
		body := ": " + strings.Repeat("c", 1000) + "\nid: 1\ndata: " + sseAnswer + "\n\n"
		_, held, err := read(BodyEventStream, body, ResponseOptions{MaxMessageBytes: len(sseAnswer)})
		if err != nil || len(held) != 1 {
			t.Fatalf("held %q, error %v", held, err)
		}
	})
	t.Run("open after the answer", func(t *testing.T) {
		t.Parallel()
		b := newSlowBody()
		go b.w.Write([]byte("data: " + sseAnswer + "\n\n")) // and then nothing, never the end
		start := time.Now()
		held, err := ReadResponse(context.Background(), BodyEventStream, b, post(), ResponseOptions{EndWait: 50 * time.Millisecond}, func([]byte) error { return nil })
		if err == nil || held != nil || !strings.Contains(err.Error(), "stayed open") {
			t.Fatalf("held %q, error %v", held, err)
		}
		// Before DefaultEndWait: the wait given, not the default.
		if time.Since(start) > DefaultEndWait*3/4 {
			t.Error("the end wait was not enforced promptly")
		}
	})
	t.Run("no end wait given is the default", func(t *testing.T) {
		t.Parallel()
		b := newSlowBody()
		go func() {
			b.w.Write([]byte("data: " + sseAnswer + "\n\n"))
			time.Sleep(100 * time.Millisecond) // open for a while after the answer
			b.w.Write([]byte("data: " + sseNote + "\n\n"))
			b.w.Close()
		}()
		held, err := ReadResponse(context.Background(), BodyEventStream, b, post(), ResponseOptions{}, func([]byte) error { return nil })
		if err != nil || len(held) != 2 {
			t.Fatalf("held %q, error %v", held, err)
		}
	})
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		b := newSlowBody()
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("the listing timed out")
		go func() {
			b.w.Write([]byte("data: " + sseNote + "\n\n"))
			cancel(cause)
		}()
		_, err := ReadResponse(ctx, BodyEventStream, b, post(), ResponseOptions{}, func([]byte) error { return nil })
		if !errors.Is(err, cause) {
			t.Fatal(err)
		}
	})
}

func TestLimitBody(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		size int
		trip bool
	}{{100, false}, {101, true}, {5000, true}} {
		data, err := io.ReadAll(LimitBody(io.NopCloser(strings.NewReader(strings.Repeat("x", tt.size))), 100))
		if tripped := errors.Is(err, ErrMessageTooLarge); tripped != tt.trip || !tt.trip && (err != nil || len(data) != tt.size) {
			t.Errorf("size %d: %d bytes, err %v", tt.size, len(data), err)
		}
	}
}

// TestLimitBodyBuffers: a Read never returns more than its buffer holds,
// whatever the buffer's size beside what is left under the cap.
func TestLimitBodyBuffers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		size, read int // body bytes; each Read's buffer (its capacity too)
		trip       bool
	}{
		{name: "buffer of the cap", size: 100, read: 100},
		{name: "buffer of the cap less one", size: 100, read: 99},
		{name: "buffer of the cap plus one", size: 100, read: 101},
		{name: "buffer of the cap, body over it", size: 150, read: 100, trip: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := LimitBody(io.NopCloser(strings.NewReader(strings.Repeat("x", tt.size))), 100)
			total := 0
			var err error
			for err == nil {
				buf := make([]byte, tt.read)
				var n int
				n, err = r.Read(buf)
				if n > len(buf) {
					t.Fatalf("Read of %d bytes returned %d", len(buf), n)
				}
				total += n
			}
			if tt.trip != errors.Is(err, ErrMessageTooLarge) || !tt.trip && (err != io.EOF || total != tt.size) {
				t.Errorf("%d bytes, then %v", total, err)
			}
		})
	}
}

// TestEventReaderLastID: the id a client resumes after is that of the last
// event with an id and a data line, whether or not it carried a message.
func TestEventReaderLastID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                     "",
		"data: x\n\n":                          "",
		"id: p1\ndata: \n\n":                   "p1",
		"id: p1\ndata: \n\nid: 7\ndata: x\n\n": "7",
		"id: a\ndata: x\n\nid:\ndata: y\n\n":   "a",
		"id: a\ndata: x\n\n: comment\n\n":      "a",
	} {
		er := NewEventReader(strings.NewReader(in), 1000)
		for {
			if _, err := er.Next(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%q: %v", in, err)
				}
				break
			}
		}
		if got := er.LastID(); got != want {
			t.Errorf("%q: LastID %q, want %q", in, got, want)
		}
	}
}

// TestEventReaderSizeCap: the cap is on the whole event, every line and
// line end of it, the blank line that ends it included: inclusive, and
// counted afresh for each event (a skipped one too).
func TestEventReaderSizeCap(t *testing.T) {
	t.Parallel()
	const max = 100
	line := func(n int) string { return "data: " + strings.Repeat("x", n-7) + "\n" } // n bytes
	for _, tt := range []struct {
		name   string
		in     string
		events int
		tooBig bool
	}{
		{name: "one line at the cap", in: line(max-1) + "\n", events: 1},
		{name: "one line over the cap", in: line(max) + "\n", tooBig: true},
		{name: "two lines at the cap", in: line(50) + line(49) + "\n", events: 1},
		{name: "two lines over the cap, each under it", in: line(60) + line(60) + "\n", tooBig: true},
		{name: "a comment counts", in: ": " + strings.Repeat("c", 47) + "\n" + line(50) + "\n", tooBig: true},
		{name: "two events, each at the cap", in: line(max-1) + "\n" + line(max-1) + "\n", events: 2},
		{name: "a skipped event, then one at the cap", in: "id: p1\ndata: \n\n" + line(max-1) + "\n", events: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			er := NewEventReader(strings.NewReader(tt.in), max)
			n := 0
			var err error
			for {
				if _, err = er.Next(); err != nil {
					break
				}
				n++
			}
			if tt.tooBig != errors.Is(err, ErrMessageTooLarge) || !tt.tooBig && err != io.EOF || n != tt.events {
				t.Errorf("%d events, then %v; want %d, too large: %v", n, err, tt.events, tt.tooBig)
			}
		})
	}
}

// TestSessionIDBounds: a session id is 1 to MaxSessionIDBytes bytes of
// visible ASCII, 0x21 to 0x7E, each bound inclusive.
func TestSessionIDBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, id string
		ok       bool
	}{
		{"at the length bound", strings.Repeat("a", MaxSessionIDBytes), true},
		{"over the length bound", strings.Repeat("a", MaxSessionIDBytes+1), false},
		{"one byte", "a", true},
		{"the first and last visible bytes", "!~", true},
		{"space", "a b", false},
		{"DEL", "a\x7f", false},
		{"a byte over 0x7F", "a\x80", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s SessionIDs
			err := s.Check(http.Header{"Mcp-Session-Id": {tt.id}})
			if tt.ok != (err == nil) || tt.ok && s.ID() != tt.id {
				t.Errorf("Check: %v, id %d bytes; want ok %v", err, len(s.ID()), tt.ok)
			}
		})
	}
}
