package proxy

import (
	"bytes"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// The client's notifications/cancelled (docs/PROXY.md, "Cancellation").

// cancelledMessage is the error message of the proxy's answer to a request
// the client cancelled.
const cancelledMessage = "mcpsign proxy: the request was cancelled"

// Bounds of the ids of cancelled requests whose late answer the relay
// drops (cancelledIDs).
const (
	maxCancelledIDs   = 1024
	maxCancelledBytes = 64 << 10
)

// cancel handles the client's notifications/cancelled at once, whatever is
// held, by its requestId as the strict reader reads it (cancelledID):
//
//   - a request held (behind a check or a listing) is dropped and never
//     sent;
//   - a request in flight is forgotten: the cancellation goes to the
//     server, the request's id is kept among the cancelled ones (its
//     answer, if the server sends one anyway, is dropped), and a cancelled
//     listing no longer holds what follows it;
//
// and either way the request is answered with the proxy's error, once, so
// that neither the relay nor a client transport (the front's) holds it as
// in flight for as long as the session: a server need not answer a
// cancelled request, and the TypeScript SDK's servers do not. The client,
// which cancelled it, may ignore the answer.
//
// A cancellation that names no request the relay holds or has in flight
// (its requestId absent, unreadable strictly, repeated, or not
// byte-identical to a pending id; or the handshake's, which is never
// cancelled) is dropped: a server reading it loosely could take it for
// another request's, which the relay would then wait on for good. Once
// blocked, the gate drops every cancellation instead.
func (r *relay) cancel(m *inbound) {
	id := cancelledID(m.env.Params)
	if id == nil {
		r.notice("dropped a notifications/cancelled from the client whose requestId cannot be read strictly")
		return
	}
	for i, h := range r.heldClient {
		if h.perr == nil && !h.blank && h.env.Kind == mcpwire.KindRequest && bytes.Equal(h.env.ID, id) {
			r.heldClient = append(r.heldClient[:i:i], r.heldClient[i+1:]...)
			r.heldBytes -= len(h.line)
			r.answer(id, codeInternalError, cancelledMessage, nil)
			return
		}
	}
	p, ok := r.pending.Get(id)
	if !ok || p.method == mcpwire.MethodInitialize || p.method == mcpwire.MethodDiscover {
		return
	}
	_, _ = r.pending.Take(id)
	r.cancelled.add(id)
	r.sendServer(m.line)
	r.answer(id, codeInternalError, cancelledMessage, nil)
	if p.gating {
		p.gating = false
		r.listsInFlight--
		r.drain()
	}
}

// cancelledID returns the raw requestId of notifications/cancelled params,
// or nil when they do not read strictly as an object with one.
func cancelledID(params []byte) []byte {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	m, err := digest.ReadMembers(params, "requestId")
	if err != nil {
		return nil
	}
	return m["requestId"]
}

// cancelledIDs are the ids of requests the client cancelled while they
// were in flight, in the order they were cancelled: a late answer to one
// is dropped (and its id forgotten), and a new request with one of them is
// refused, so that a late answer is never taken for another request's.
// Bounded (maxCancelledIDs, maxCancelledBytes): the oldest is forgotten
// first, and a late answer to a forgotten id answers nothing pending (a
// protocol violation, as any such answer).
type cancelledIDs struct {
	set   map[string]struct{}
	order []string // oldest first; may hold ids taken already
	bytes int
}

func (c *cancelledIDs) add(id []byte) {
	if c.set == nil {
		c.set = map[string]struct{}{}
	}
	k := string(id)
	if _, ok := c.set[k]; ok {
		return
	}
	c.set[k] = struct{}{}
	c.order = append(c.order, k)
	c.bytes += len(k)
	for len(c.set) > maxCancelledIDs || c.bytes > maxCancelledBytes {
		old := c.order[0]
		c.order = c.order[1:]
		if _, ok := c.set[old]; ok {
			delete(c.set, old)
			c.bytes -= len(old)
		}
	}
	c.compact()
}

// has reports whether id is the id of a cancelled request.
func (c *cancelledIDs) has(id []byte) bool {
	_, ok := c.set[string(id)]
	return ok
}

// take forgets id, and reports whether it was the id of a cancelled
// request.
func (c *cancelledIDs) take(id []byte) bool {
	k := string(id)
	if _, ok := c.set[k]; !ok {
		return false
	}
	delete(c.set, k)
	c.bytes -= len(k)
	c.compact()
	return true
}

// len returns the number of ids kept.
func (c *cancelledIDs) len() int { return len(c.set) }

// compact drops the ids taken already from the order, once they are most
// of it, so that it stays bounded too.
func (c *cancelledIDs) compact() {
	if len(c.order) <= 2*len(c.set)+16 {
		return
	}
	kept := c.order[:0:0]
	for _, k := range c.order {
		if _, ok := c.set[k]; ok {
			kept = append(kept, k)
		}
	}
	c.order = kept
}
