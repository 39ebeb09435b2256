package proxy

import (
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// A slow OnEvent handler (a host's stderr that is not read) delays later
// events, never the session: events are delivered outside the relay's lock
// (docs/PROXY.md, "Lifetimes"). The first event's handler blocks until the
// session's listing and call are answered: without timing, a session that
// waited for it would never get there (it runs into testContext's bound
// and fails); a 3 s handler, measured against the session's time, failed
// on a loaded machine where the server's start alone took that long.
func TestSlowOnEventStallsNothing(t *testing.T) {
	var events atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	s, _ := startLockedWith(t, fixtures.ModeHonest, func(o *Options) {
		o.OnEvent = func(Event) {
			if events.Add(1) == 1 {
				<-release
			}
		}
	})
	defer unblock()
	ctx := testContext(t)
	cs, err := s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("listing tools while an OnEvent handler blocks: %v", err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}); err != nil {
		t.Fatalf("calling search_notes while an OnEvent handler blocks: %v", err)
	}
	if events.Load() == 0 {
		t.Errorf("no event was delivered")
	}
	unblock()
	cs.Close()
	if err := s.wait(); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// A check still running when Run returns is cancelled and waited for: its
// context derives from the session's, and nothing it decides is written
// after Run returned (docs/PROXY.md, "Lifetimes").
func TestCheckEndsWithRun(t *testing.T) {
	argv := exampleArgv(t, fixtures.ModeHonest)
	var checking, returned atomic.Bool
	entered := make(chan struct{}, 1)
	policy := PolicyFunc(func(ctx context.Context, _ *digest.Snapshot) (*Decision, error) {
		checking.Store(true)
		entered <- struct{}{}
		<-ctx.Done() // a slow check: a bundle fetched, a lock written
		defer returned.Store(true)
		return &Decision{Allow: true, Summary: "allowed after its context ended"}, nil
	})
	inR, inW := io.Pipe()
	out := &fixtures.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, out, Options{
			Command:       argv,
			Policy:        policy,
			CheckTimeout:  20 * time.Second,
			ShutdownGrace: 200 * time.Millisecond,
		})
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n")
	select {
	case <-entered:
	case <-time.After(testTimeout):
		t.Fatal("the start-up check never ran")
	}
	inW.Close() // the client leaves while the check runs
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return while a check ran")
	}
	if !returned.Load() {
		t.Errorf("Run returned while its check was still running")
	}
	after := out.String()
	time.Sleep(300 * time.Millisecond)
	if got := out.String(); got != after {
		t.Errorf("written to the client after Run returned: %q", strings.TrimPrefix(got, after))
	}
	if strings.Contains(after, `"result"`) {
		t.Errorf("the held initialize answer reached the client after the session ended: %q", after)
	}
}

// A client that stays connected is not read after Run returned: the
// reader of an input that takes a deadline (an *os.File in the poller, as
// mcpsign-proxy's stdin) is woken and waited for, and the deadline is
// cleared again, so that a host that runs the proxy again on the same
// input loses no line (docs/PROXY.md, "Lifetimes").
func TestClientReaderEndsWithRun(t *testing.T) {
	argv := exampleArgv(t, fixtures.ModeHonest)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	allow := PolicyFunc(func(context.Context, *digest.Snapshot) (*Decision, error) { return &Decision{Allow: true}, nil })
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, pr, io.Discard, Options{Command: argv, Policy: allow, ShutdownGrace: 500 * time.Millisecond})
	}()
	time.Sleep(200 * time.Millisecond) // the client's reader waits in a read
	cancel()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Run did not return once interrupted")
	}
	if _, err := io.WriteString(pw, "next\n"); err != nil {
		t.Fatal(err)
	}
	if err := pr.SetReadDeadline(time.Now().Add(testTimeout)); err != nil { // a hang bound: the line is in the pipe
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := pr.Read(buf)
	if err != nil || string(buf[:n]) != "next\n" {
		t.Errorf("the host's read after Run returned: %q, %v; want the line (the proxy's reader outlived Run)", buf[:n], err)
	}
}
