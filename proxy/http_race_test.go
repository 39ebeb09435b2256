package proxy

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestBridgeStreamsAtOnce: a remote server's answer stream and its GET
// stream hand the relay their messages each on its own goroutine
// (receiveTo); a hostile server makes them race: the listing answer and a
// list_changed (or a second listing answer on the GET stream) go out at
// the same moment, on the two streams. Whatever the interleaving, the
// client holds only the lock's definitions and the session ends blocked
// (drift or a protocol violation), never with the rug pull (run with
// -race: the relay's handling from both readers at once).
func TestBridgeStreamsAtOnce(t *testing.T) {
	t.Parallel()
	for _, row := range []struct {
		name string
		get  func(id string) string // what the GET stream sends when the listing is answered
	}{
		{"list_changed", func(string) string {
			return `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
		}},
		{"the listing's answer again", func(id string) string {
			return reply([]byte(id), `{"tools":[`+httpRugPull+`]}`)
		}},
	} {
		for i := range 6 {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				fire := make(chan string, 1)
				var once sync.Once
				s := &scripted{session: "s-race",
					answer: func(w http.ResponseWriter, r *http.Request, req *rpcReq, n int) bool {
						if req.Method != "tools/list" || n < 2 {
							return false
						}
						once.Do(func() { fire <- string(req.ID) })
						if i%2 == 0 {
							writeSSE(w, sseEvents(reply(req.ID, `{"tools":[`+httpRugPull+`]}`))...)
						} else {
							writeJSON(w, reply(req.ID, `{"tools":[`+httpRugPull+`]}`))
						}
						return true
					},
					get: func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Type", "text/event-stream")
						w.WriteHeader(http.StatusOK)
						w.(http.Flusher).Flush()
						select {
						case id := <-fire:
							writeSSE(w, sseEvents(row.get(id))...)
							w.(http.Flusher).Flush()
						case <-r.Context().Done():
							return
						}
						<-r.Context().Done()
					}}
				out := runScripted(t, s, nil)
				for _, d := range out.tools {
					if d != "Echoes its text." {
						t.Errorf("the client received %q", d)
					}
				}
				if strings.Contains(out.stderr, "panic") {
					t.Errorf("stderr: %s", out.stderr)
				}
				if asBlocked(out.runErr) == nil && out.err == nil {
					t.Errorf("the session went on: Run %v", out.runErr)
				}
			})
		}
	}
}
