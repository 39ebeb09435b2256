package front_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/front"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// postBody POSTs body into the session and returns the status and the
// answer's body, read until it ends or ctx does.
func postBody(ctx context.Context, url, session, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set(front.HeaderSessionID, session)
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// postAnswer is what postBody returned.
type postAnswer struct {
	status int
	body   string
	err    error
}

// postInBackground runs postBody on a goroutine of its own; its answer
// comes on the channel.
func postInBackground(ctx context.Context, url, session, body string) <-chan postAnswer {
	done := make(chan postAnswer, 1)
	go func() {
		st, b, err := postBody(ctx, url, session, body)
		done <- postAnswer{st, b, err}
	}()
	return done
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestCancellationReadOnce: the client's notifications/cancelled is read
// once, by the relay's strict reader, and the front's table of unanswered
// requests follows what the relay did with it: a cancellation whose
// requestId the strict reader does not tie to the call in flight (a
// repeated member, another case, a number that is not the id's bytes) is
// not relayed, and the front still holds the call, so that the end of its
// POST still cancels it upstream; the call's own cancellation is relayed
// and answered. Failed on main: the front read those loosely (encoding/json:
// the last repeated member, any case, 900.0 and 900.5 as 900) and forgot
// the call, which the relay still waited on, and a loose upstream (go-sdk's)
// was told to cancel it by a message the relay did not read as cancelling
// anything.
func TestCancellationReadOnce(t *testing.T) {
	const id = 900
	for _, tc := range []struct {
		name   string
		params string
		strict bool // the relay reads it as the call's cancellation
	}{
		{"the call's own", `{"requestId":900}`, true},
		{"repeated requestId", `{"requestId":1,"requestId":900}`, false},
		{"requestId in another case", `{"RequestId":900}`, false},
		{"900.0", `{"requestId":900.0}`, false},
		{"900.5", `{"requestId":900.5}`, false},
		{"a string", `{"requestId":"900"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGoSDKServer(t, time.Hour)
			s, ctx, cs := g.session(t)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := postInBackground(cctx, s.url, cs.ID(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hang","arguments":{}}}`, id))
			select {
			case <-g.started:
			case <-ctx.Done():
				t.Fatal("the call never reached the upstream")
			}
			if status, body := rawRequest(ctx, t, s.url, cs.ID(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":`+tc.params+`}`); status != http.StatusAccepted {
				t.Fatalf("the cancellation: %d %q", status, body)
			}
			if tc.strict {
				select {
				case a := <-done:
					if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, "mcpsign proxy: the request was cancelled") {
						t.Errorf("the cancelled call's answer: %d %q %v, want the proxy's cancellation error", a.status, a.body, a.err)
					}
				case <-time.After(hangBound):
					t.Fatal("the cancelled call was never answered")
				}
			} else {
				select {
				case <-g.cancelled:
					t.Fatal("the upstream cancelled the call on a cancellation the relay does not read as the call's")
				case a := <-done:
					t.Fatalf("the call was answered: %d %q %v", a.status, a.body, a.err)
				case <-time.After(300 * time.Millisecond):
				}
				if n := front.PendingCalls(s.f); n != 1 {
					t.Fatalf("the front holds %d unanswered calls, want the call the relay still waits on", n)
				}
				cancel() // the client leaves: the front cancels the call
			}
			select {
			case <-g.cancelled:
			case <-time.After(hangBound):
				t.Fatal("the upstream was never told the call was cancelled")
			}
			if !waitFor(hangBound, func() bool { return front.PendingCalls(s.f) == 0 }) {
				t.Errorf("the front holds %d unanswered calls, want 0", front.PendingCalls(s.f))
			}
			if got, err := call(ctx, cs, "fast"); err != nil || got != "fast" {
				t.Errorf("the session after: %q %v", got, err)
			}
		})
	}
}

// TestCancelledStdioCall: a stdio upstream that does not answer a call
// once it was cancelled (or answers it late) leaves nothing behind: the
// relay answers the call as cancelled when it sends the cancellation on,
// the late answer reaches no one, the front and the client transport
// forget the call, and a request under its id is refused while the late
// answer may still come. Failed on main: the call stayed unanswered (and
// held by the relay, the front and the transport) for as long as the
// session, or got the late answer.
func TestCancelledStdioCall(t *testing.T) {
	const id = 900
	for _, behavior := range []string{fixtures.BadIgnoresCancel, fixtures.BadLateAfterCancel} {
		t.Run(behavior, func(t *testing.T) {
			u := upstream{name: "stdio-" + behavior, command: []string{fixtures.BuildBadServer(t), "--behavior", behavior}}
			s, ctx, cs := sessionOf(t, u)
			cctx, cancel := context.WithTimeout(ctx, hangBound)
			defer cancel()
			done := postInBackground(cctx, s.url, cs.ID(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"good","arguments":{"hang":true}}}`, id))
			if !waitFor(hangBound, func() bool { return front.RelayedCalls(s.f) == 1 }) {
				t.Fatal("the relay never read the call")
			}
			time.Sleep(50 * time.Millisecond) // and sent it on
			if status, body := rawRequest(ctx, t, s.url, cs.ID(), fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id)); status != http.StatusAccepted {
				t.Fatalf("the cancellation: %d %q", status, body)
			}
			a := <-done
			if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, "mcpsign proxy: the request was cancelled") || strings.Contains(a.body, "late") {
				t.Fatalf("the cancelled call's answer: %d %q %v, want the proxy's cancellation error", a.status, a.body, a.err)
			}
			if !waitFor(hangBound, func() bool { return front.PendingCalls(s.f) == 0 }) {
				t.Errorf("the front holds %d unanswered calls, want 0", front.PendingCalls(s.f))
			}
			status, body := rawRequest(ctx, t, s.url, cs.ID(), `{"jsonrpc":"2.0","id":901,"method":"tools/call","params":{"name":"good","arguments":{}}}`)
			if status != http.StatusOK || !strings.Contains(body, `"called"`) {
				t.Fatalf("the call after: %d %q, want its answer", status, body)
			}
			if behavior == fixtures.BadIgnoresCancel {
				// The transport forgot the id (the proxy answered it); the
				// relay refuses it while the server may still answer it.
				status, body := rawRequest(ctx, t, s.url, cs.ID(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"good","arguments":{}}}`, id))
				if status != http.StatusOK || !strings.Contains(body, "was cancelled") {
					t.Errorf("a request under the cancelled id: %d %q, want the relay's refusal", status, body)
				}
			}
			if n := front.PendingCalls(s.f); n != 0 {
				t.Errorf("the front holds %d unanswered calls at the end, want 0", n)
			}
		})
	}
}
