package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/proxy"
)

// methodListen is the 2026-07-28 request for list_changed notifications.
const methodListen = "subscriptions/listen"

// serveStateless relays one request of the 2026-07-28 generation (no
// session) through a relay of its own (docs/SERVE.md, "Stateless
// requests"): the relay lists the upstream and checks the listing before
// it forwards the request (its start-up check, with the request's _meta),
// checks the answer (a list result is checked page by page), and then the
// answer alone is sent as the POST's JSON body. Notifications and requests
// the upstream sends before its answer are dropped: a stateless request
// has no stream for them (progress is lost; the 2026-07-28 generation asks
// for input in results, input_required, not by server requests).
// go-sdk's StreamableServerTransport cannot serve this generation without
// its own StreamableHTTPHandler and *mcp.Server (the protocol version it
// checks travels in an unexported context key), so this one JSON answer is
// written here.
func (f *Front) serveStateless(w http.ResponseWriter, r *http.Request, body []byte, msg *mcpwire.Message) {
	switch msg.Kind {
	case mcpwire.KindNotification:
		// Nothing stateless to notify: a cancellation ends with its POST.
		w.WriteHeader(http.StatusAccepted)
		return
	case mcpwire.KindRequest:
		if msg.Method == methodListen {
			// Its answer is a stream of list_changed notifications that
			// never ends; each would have to make the relay list again,
			// and a stateless relay lives for one answer.
			rpcError(w, http.StatusOK, msg.ID, mcpwire.CodeMethodNotFound, "mcpsign front: "+methodListen+" is not relayed statelessly: open a session (initialize) to be told of list changes")
			return
		}
	default:
		http.Error(w, "Bad Request: a response needs an Mcp-Session-Id", http.StatusBadRequest)
		return
	}
	var line bytes.Buffer
	if err := json.Compact(&line, body); err != nil {
		rpcError(w, http.StatusBadRequest, msg.ID, -32700, "mcpsign front: the message is not JSON")
		return
	}
	line.WriteByte('\n')
	id := bytes.Clone(msg.ID)
	opts := f.relayOptions("stateless", r.Header.Values("Authorization"))
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	// A client that leaves ends its relay: the upstream is stopped, and
	// nothing is answered to nobody.
	stop := context.AfterFunc(r.Context(), cancel)
	defer stop()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	f.mu.Lock()
	if f.draining || f.relays >= f.o.MaxSessions {
		f.mu.Unlock()
		f.m.refused.Inc()
		f.unavailable(w, fmt.Sprintf("%d sessions and stateless requests are open, the most this server takes", f.o.MaxSessions))
		return
	}
	f.relays++
	f.runs.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.runs.Done()
		err := proxy.Run(ctx, inR, outW, opts)
		f.relayDone() // its upstream stopped: no longer counted
		outW.Close()
		errc <- err
	}()
	go func() { _, _ = inW.Write(line.Bytes()) }()
	var answer []byte
	lr := mcpwire.NewLineReader(outR, opts.MaxMessageBytes)
	for answer == nil {
		l, err := lr.Next()
		if err != nil {
			break
		}
		m, perr := mcpwire.Parse(mcpwire.Content(l))
		if perr == nil && m.Kind == mcpwire.KindResponse && bytes.Equal(m.ID, id) {
			answer = bytes.Clone(mcpwire.Content(l))
		}
	}
	// The client has its answer (or none will come): the relay closes the
	// upstream's side and ends.
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if answer == nil {
		err := <-errc
		why := "the relay ended"
		if err != nil {
			why = err.Error()
		}
		if r.Context().Err() != nil {
			return // the client left
		}
		rpcError(w, http.StatusBadGateway, id, proxy.InterruptedCode, "mcpsign front: the upstream ended before it answered: "+textsafe.Escape(why))
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(f.o.WriteTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer)
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}
