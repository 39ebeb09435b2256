package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// initializedLine is the notifications/initialized the proxy sends.
const initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

// proxyClientInfo names the proxy in the _meta of its own modern requests
// when the client sent none.
var proxyClientInfo = json.RawMessage(`{"name":"mcpsign-proxy","version":"devel"}`)

// ownReply is the server's answer to one of the proxy's own requests.
type ownReply struct {
	result []byte
	err    error
}

// Call implements mcpwire.Caller: it sends one request of the proxy's own
// and waits for the answer. Its id is a string with the session's random
// prefix, which the client cannot use; the answer, tied to it by its exact
// bytes, is routed here by the server reader and never forwarded.
func (r *relay) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := r.prefix + strconv.FormatInt(r.ownSeq.Add(1), 10)
	idJSON, _ := json.Marshal(id)
	ch := make(chan ownReply, 1)
	key := string(idJSON)
	r.ownMu.Lock()
	if r.ownClosed != nil {
		r.ownMu.Unlock()
		return nil, r.ownClosed
	}
	r.own[key] = ch
	r.ownMu.Unlock()
	defer func() {
		r.ownMu.Lock()
		delete(r.own, key)
		r.ownMu.Unlock()
	}()
	line := make([]byte, 0, 64+len(method)+len(params))
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, idJSON...)
	line = append(line, `,"method":`...)
	line = strconv.AppendQuote(line, method)
	line = append(line, `,"params":`...)
	line = append(line, params...)
	line = append(line, "}\n"...)
	if err := r.toServer.failed(); err != nil {
		return nil, fmt.Errorf("sending %s to the server: %w", method, err)
	}
	r.toServer.enqueue(line)
	r.toServer.flush()
	select {
	case rep := <-ch:
		if rep.err != nil {
			if re, ok := rep.err.(*mcpwire.RPCError); ok {
				re.Method = method
			}
			return nil, rep.err
		}
		return rep.result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the server's answer to %s: %w", method, context.Cause(ctx))
	}
}

// deliverOwn routes the server's answer to one of the proxy's requests,
// found by the exact bytes of its id. It reports whether m was one (and so
// must not be forwarded).
func (r *relay) deliverOwn(m *mcpwire.Message) bool {
	if m.Kind != mcpwire.KindResponse {
		return false
	}
	r.ownMu.Lock()
	ch := r.own[string(m.ID)]
	delete(r.own, string(m.ID))
	r.ownMu.Unlock()
	if ch == nil {
		return false
	}
	if m.Error != nil {
		// Strictly, as source reads them: an error answer of
		// "method not found" makes a kind empty (mcpwire.ListAll).
		ch <- ownReply{err: mcpwire.ReadRPCError("", m.Error)}
	} else {
		ch <- ownReply{result: bytes.Clone(m.Result)}
	}
	return true
}

// closeOwn fails every waiting and later call: the server is gone.
func (r *relay) closeOwn(err error) {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	if r.ownClosed == nil {
		r.ownClosed = err
	}
	for k, ch := range r.own {
		ch <- ownReply{err: err}
		delete(r.own, k)
	}
}

// listAll lists every page of every kind the server announced, and its
// static resources under ResourcesPin, as a snapshot.
func (r *relay) listAll(ctx context.Context, h *mcpwire.Hello, clientCaps json.RawMessage) (*digest.Snapshot, error) {
	snap, err := mcpwire.ListAll(ctx, r, h, mcpwire.Limits{MaxPages: MaxPages, Resources: r.o.Resources == ResourcesPin})
	if snap != nil {
		// The server answered the client's capabilities: the check compares
		// them with the lock's (docs/LOCK.md, "clientCapabilities").
		snap.ClientCapabilities = clientCaps
	}
	return snap, err
}
