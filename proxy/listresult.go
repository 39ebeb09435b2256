package proxy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// The list results the client receives, checked page by page and as a
// whole listing (docs/PROXY.md, "Checks", 2).

// chain accumulates the pages of one listing the client reads, so that the
// definitions it ends up with are checked as a set.
type chain struct {
	bytes   int // of the pages' lines (the items point into them) and the cursor
	items   []json.RawMessage
	started bool // began with a page asked for without a cursor
	pages   int
	// cursors are the cursors this listing was asked for or handed: one
	// handed again is a loop (the proxy's own listing refuses it too).
	cursors map[string]bool
}

// dropChain forgets the listing of kind k awaiting the page of cursor.
func (r *relay) dropChain(k digest.Kind, cursor string) {
	if c := r.chains[k][cursor]; c != nil {
		r.chainBytes -= c.bytes
		delete(r.chains[k], cursor)
	}
}

// maxChains bounds the listings of one kind awaiting their next page.
const maxChains = 64

// discovered handles the server's answer to the client's server/discover.
func (r *relay) discovered(m *inbound, p *pendingReq) {
	h, modern, err := mcpwire.ParseDiscover(m.env.Result, p.meta, proxyClientInfo)
	if err != nil {
		r.block(&BlockedError{What: "the server/discover result", Err: err, subjectID: p.id})
		return
	}
	if !modern {
		// The client falls back to initialize, which is checked.
		r.sendClient(m.line)
		return
	}
	if !r.checked {
		r.startTask(&task{what: "start-up listing", startup: true, subject: m, subjID: p.id, hello: h})
		return
	}
	// A later server/discover: its instructions reach the client.
	if equalInstructions(h.Instructions, r.approved.snap.Instructions) {
		r.sendClient(m.line)
		return
	}
	snap := *r.approved.snap
	snap.Instructions = h.Instructions
	r.startTask(&task{what: "server/discover result", subject: m, subjID: p.id, snap: &snap, helloR: r.session})
}

func equalInstructions(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// listResult checks a result that carries definitions before the client
// receives it.
func (r *relay) listResult(m *inbound, p *pendingReq) {
	var subjID []byte
	what := "a list result"
	if p != nil {
		subjID = p.id
		what = p.method + " result"
	}
	if !r.checked {
		// Only the handshake and pings pass before the start-up check; a
		// definition list now answers something else.
		r.block(&BlockedError{What: what, Err: errors.New("the server sent definitions before the start-up check"), subjectID: subjID})
		return
	}
	for _, k := range r.checkedKinds() {
		if r.lists(&m.env)&mcpwire.ListFlag(k) == 0 {
			continue
		}
		ch, complete, err := r.page(m, p, k)
		if err != nil {
			r.block(&BlockedError{What: what, Err: err, subjectID: subjID})
			return
		}
		if r.approved.covers(k, ch.items, complete) {
			continue // the bytes the policy approved
		}
		pc := &pageCheck{kind: k, items: ch.items, complete: complete}
		r.startTask(&task{what: what, subject: m, subjID: subjID, snap: r.approved.with(pc), page: pc, helloR: r.session})
		return
	}
	r.sendClient(m.line)
}

// page adds the page of kind k in the result m (the answer to p, if any)
// to the listing it continues, and returns that listing and whether it is
// complete. An error blocks the session.
func (r *relay) page(m *inbound, p *pendingReq, k digest.Kind) (ch *chain, complete bool, err error) {
	items, next, hasNext, err := digest.SplitList(k, m.env.Result)
	if err != nil {
		return nil, false, err
	}
	if hasNext && next == "" {
		// go-sdk takes an empty cursor for the last page, the
		// TypeScript SDK asks for it: the two would hold different
		// listings (the proxy's own listing refuses it too).
		return nil, false, fmt.Errorf("%w: an empty nextCursor, which clients read differently", mcpwire.ErrProtocol)
	}
	// Only an answer to the client's own list request of this kind
	// continues a listing: a list in any other result is checked page
	// by page, and keeps nothing (else a server could make the proxy
	// keep cursors without bound).
	list := p != nil && p.kind == k
	if list {
		ch = r.takeChain(k, p.cursor)
		if p.cursor != nil {
			ch.cursors[*p.cursor] = true
		}
		if hasNext && ch.cursors[next] {
			// The client would page forever, and hold nothing the
			// proxy's own listing (or verify-pin) would accept.
			return nil, false, fmt.Errorf("%w: cursor %s handed again in one listing", mcpwire.ErrCursorLoop, textsafe.RawQuote(textsafe.Cut(next, 80)))
		}
		if hasNext {
			ch.cursors[next] = true
		}
	} else {
		ch = &chain{} // a page whose listing the proxy did not see begin
	}
	ch.items = append(ch.items, items...)
	ch.pages++
	ch.bytes += len(m.line)
	if ch.pages > MaxPages {
		return nil, false, fmt.Errorf("a listing of more than %d pages", MaxPages)
	}
	if hasNext && list {
		if err := r.keepChain(k, next, ch); err != nil {
			return nil, false, err
		}
	}
	return ch, ch.started && !hasNext, nil
}

// takeChain returns the listing of kind k that the page asked for with
// cursor continues (a new one for a first page, or for a cursor the proxy
// did not hand), and forgets it until its next page is handed.
func (r *relay) takeChain(k digest.Kind, cursor *string) *chain {
	var ch *chain
	if cursor == nil {
		ch = &chain{started: true}
	} else if c := r.chains[k][*cursor]; c != nil {
		ch = c
		r.dropChain(k, *cursor)
	} else {
		ch = &chain{}
	}
	if ch.cursors == nil {
		ch.cursors = map[string]bool{}
	}
	return ch
}

// keepChain keeps the listing ch of kind k until the client asks for the
// page of next, within maxChains listings of a kind and MaxHeldBytes.
func (r *relay) keepChain(k digest.Kind, next string, ch *chain) error {
	if r.chains[k] == nil {
		r.chains[k] = map[string]*chain{}
	}
	if len(r.chains[k]) >= maxChains {
		for c := range r.chains[k] {
			r.dropChain(k, c)
			break
		}
	}
	ch.bytes += len(next)
	r.chains[k][next] = ch
	r.chainBytes += ch.bytes
	if r.chainBytes > r.o.MaxHeldBytes {
		return fmt.Errorf("more than %d bytes of listings the client is still paging through", r.o.MaxHeldBytes)
	}
	return nil
}

// cursorOf returns the cursor of list request params, or nil.
func cursorOf(params []byte) *string {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	m, err := digest.ReadMembers(params, "cursor")
	if err != nil {
		return nil
	}
	v, ok := m["cursor"]
	if !ok || string(v) == "null" {
		return nil
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return nil
	}
	return &s
}
