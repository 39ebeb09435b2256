package mcpwire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestReadResponseBufferReused: the read buffer of an answer stream goes
// back to a pool when the stream ended (docs/PERFORMANCE.md, "HTTP
// front"): what one stream relayed and held stays as it was read while
// later streams reuse the buffer (nothing points into it), and a stream
// no longer costs a buffer of its own (readBufferBytes).
func TestReadResponseBufferReused(t *testing.T) {
	stream := func(i int) (string, string, string) {
		note := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d,"pad":%q}}`, i, strings.Repeat("x", i%50))
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"n":%d}}`, i)
		return "data: " + note + "\n\n" + "data: " + answer + "\n\n", note, answer
	}
	read := func(body string) (relayed, held [][]byte) {
		c, err := NewPostCheck([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
		if err != nil {
			t.Fatal(err)
		}
		held, err = ReadResponse(context.Background(), BodyEventStream, io.NopCloser(strings.NewReader(body)), c, ResponseOptions{},
			func(m []byte) error { relayed = append(relayed, m); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return relayed, held
	}
	type got struct{ relayed, held [][]byte }
	var all []got
	for i := range 200 {
		body, _, _ := stream(i)
		r, h := read(body)
		all = append(all, got{r, h})
	}
	for i, g := range all {
		_, note, answer := stream(i)
		if len(g.relayed) != 1 || !bytes.Equal(g.relayed[0], []byte(note)) || len(g.held) != 1 || !bytes.Equal(g.held[0], []byte(answer)) {
			t.Fatalf("stream %d: relayed %q, held %q; want %q, %q", i, g.relayed, g.held, note, answer)
		}
	}

	if raceEnabled {
		return // the race detector drops a quarter of what is put in a pool
	}
	body, _, _ := stream(7)
	read(body) // the pool holds a buffer
	const n = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		read(body)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per >= readBufferBytes {
		t.Errorf("a stream allocated %d bytes, a read buffer's %d or more: its buffer was not reused", per, readBufferBytes)
	}
}
