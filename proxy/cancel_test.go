package proxy

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCancellation: a call the client cancels is forgotten by the relay
// once the cancellation went to the server, whatever the server does
// then: it is answered by the proxy once, a late answer of the server's
// reaches no one (and is not taken for another request's), and a new
// request under its id is refused while that answer may still come. A
// cancellation the strict reader cannot tie to a request in flight is
// not relayed: a server reading it loosely would cancel a request the
// relay still waits on. Failed on main: the late answer reached the
// client, a server that ignores the cancellation left the call unanswered
// (and pending) for good, and the loosely readable cancellations reached
// the server.
func TestCancellation(t *testing.T) {
	t.Parallel()
	lock := writeTOFULock(t, scriptedArgv(t, "honest"))
	const (
		initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		hang        = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"hang":true}}}`
		cancel3     = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`
		call3       = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{}}}`
		call4       = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"greet","arguments":{}}}`
	)
	// Cancellations of request 3 that no strict reader ties to it, each of
	// which a loose reader (encoding/json: the last of repeated members,
	// names in any case; go-sdk: numbers truncated) may take for it.
	loose := []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3.0}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3.5}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"3"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":[3]}`,
	}
	for _, tc := range []struct {
		name     string
		behavior string
		loose    bool // send the loose cancellations first
		reuse    bool // then a request under the cancelled id
	}{
		{name: "a late answer reaches no one", behavior: "late-after-cancel"},
		{name: "a server that ignores the cancellation", behavior: "ignores-cancel", reuse: true},
		{name: "loose cancellations are not relayed", behavior: "late-after-cancel", loose: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := t.TempDir() + "/calls"
			argv := scriptedArgv(t, tc.behavior)
			argv = append([]string{argv[0], scriptedCallsEnv + "=" + calls}, argv[1:]...)
			s := startProxy(t, lockPolicy(t, lock, LockOptions{}), argv, func(o *Options) { o.CheckTimeout = 5 * time.Second })
			p := newRawPeer(t, s.out, s.in)
			p.send(initialize)
			if m := decode(t, p.next()); m.Error != nil {
				t.Fatalf("initialize: %+v", m.Error)
			}
			p.send(initialized)
			p.send(hang)
			received := func() string {
				b, _ := os.ReadFile(calls)
				return string(b)
			}
			for deadline := time.Now().Add(testTimeout); received() == ""; { // a hang bound
				if time.Now().After(deadline) {
					t.Fatal("the call never reached the server")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if tc.loose {
				for _, l := range loose {
					p.send(l)
				}
				p.quiet(300 * time.Millisecond)
				if got := received(); got != "3\n" {
					t.Fatalf("the server received %q, want only the call: a cancellation the proxy cannot read strictly reached it", got)
				}
			}
			p.send(cancel3)
			if m := decode(t, p.next()); string(m.ID) != "3" || m.Error == nil || m.Error.Message != cancelledMessage {
				t.Fatalf("after the cancellation: %+v, want the proxy's cancellation error for 3", m)
			}
			if tc.reuse {
				p.send(call3)
				if m := decode(t, p.next()); string(m.ID) != "3" || m.Error == nil || m.Error.Code != codeInvalidRequest || !strings.Contains(m.Error.Message, "was cancelled") {
					t.Fatalf("a request under the cancelled id: %+v, want it refused", m)
				}
			}
			p.send(call4)
			if m := decode(t, p.next()); string(m.ID) != "4" || m.Error != nil || !strings.Contains(string(m.Result), "hello") {
				t.Fatalf("the call after: %+v, want its answer (the late answer reaches no one)", m)
			}
			p.quiet(100 * time.Millisecond)
			if err := s.wait(); err != nil {
				t.Errorf("Run: %v", err)
			}
			if got := received(); !strings.Contains(got, "cancelled 3\n") || strings.Count(got, "cancelled") != 1 {
				t.Errorf("the server received %q, want the one cancellation of 3", got)
			}
		})
	}
}

// TestCancelledIDsBounded: the ids of cancelled requests the relay keeps
// (for their late answers) are bounded in number and bytes, oldest
// forgotten first.
func TestCancelledIDsBounded(t *testing.T) {
	t.Parallel()
	numbers := func(n int) [][]byte {
		ids := make([][]byte, n)
		for i := range ids {
			ids[i] = []byte(strconv.Itoa(i))
		}
		return ids
	}
	half := bytes.Repeat([]byte("y"), maxCancelledBytes/2)
	for _, tc := range []struct {
		name string
		ids  [][]byte
		gone int // how many of the oldest are forgotten
	}{
		{"at the count bound: every id kept", numbers(maxCancelledIDs), 0},
		{"one past the count bound: the oldest forgotten", numbers(maxCancelledIDs + 1), 1},
		{"at the byte bound: every id kept", [][]byte{half, append([]byte("z"), half[1:]...)}, 0},
		{"one byte past the byte bound: the oldest forgotten", [][]byte{half, append([]byte("z"), half...)}, 1},
	} {
		var c cancelledIDs
		for _, id := range tc.ids {
			c.add(id)
		}
		for i, id := range tc.ids {
			if kept := c.has(id); kept != (i >= tc.gone) {
				t.Errorf("%s: id %d of %d kept: %v", tc.name, i, len(tc.ids), kept)
			}
		}
	}
	var c cancelledIDs
	for i := range 3 * maxCancelledIDs {
		c.add([]byte(strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("0", i/26)))
	}
	if c.len() > maxCancelledIDs || c.bytes > maxCancelledBytes || len(c.order) > 2*maxCancelledIDs+16 {
		t.Fatalf("kept %d ids, %d bytes, order %d", c.len(), c.bytes, len(c.order))
	}
	var d cancelledIDs
	d.add([]byte("1"))
	d.add([]byte("2"))
	if !d.take([]byte("1")) || d.take([]byte("1")) || !d.has([]byte("2")) || d.has([]byte("1")) {
		t.Fatal("take/has")
	}
	big := []byte(strings.Repeat("y", maxCancelledBytes/2+1))
	d.add(big)
	d.add(append([]byte("z"), big...))
	if d.has(big) || d.bytes > maxCancelledBytes {
		t.Fatalf("the oldest large id was kept past the byte bound (%d bytes)", d.bytes)
	}
}

// TestCancelledIDsAmortized: the ids taken already (whose late answer
// came) leave the order of cancelledIDs only once they are most of it, so
// that a cancellation and its late answer cost no rebuilding of the order
// each time; taking every id leaves nothing kept. Not parallel: it counts
// the allocations of the whole process.
func TestCancelledIDsAmortized(t *testing.T) {
	var c cancelledIDs
	for i := range 5 {
		c.add([]byte(strconv.Itoa(i)))
	}
	id := []byte(`"call-7"`)
	if n := testing.AllocsPerRun(1000, func() { c.add(id); c.take(id) }); n > 4 {
		t.Errorf("%v allocations for a cancelled id and its late answer, want the order rebuilt only now and then", n)
	}
	for i := range 5 {
		if !c.take([]byte(strconv.Itoa(i))) {
			t.Fatalf("id %d not kept", i)
		}
	}
	if c.len() != 0 || c.bytes != 0 || len(c.order) > 16 {
		t.Errorf("after every id taken: %d kept, %d bytes, order %d", c.len(), c.bytes, len(c.order))
	}
}
