package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// The checks: the proxy's own listings and the policy's judgement, run on
// a goroutine of their own while the relay holds traffic (docs/PROXY.md,
// "Checks").

// task is a check that runs while the relay holds traffic: the proxy's own
// listing at start-up or after list_changed, or the check of a list result
// the client is about to receive.
type task struct {
	what    string
	subject *inbound // the held server message forwarded when the check passes
	subjID  []byte   // the client request subject answers, if any

	// start-up and re-listing
	startup  bool           // the start-up check: the session opens when it passes
	hello    *mcpwire.Hello // from the held handshake answer; nil: discover first
	discover []byte         // modern session without server/discover: the client's _meta
	relist   bool

	// list result and instructions checks
	snap   *digest.Snapshot // the snapshot to judge
	page   *pageCheck       // to rebuild snap after an update
	helloR *mcpwire.Hello   // the session's hello, to list again

	// clientCaps are the client capabilities the client announced, which
	// the proxy's own listings record (set by startTask).
	clientCaps json.RawMessage
}

// pageCheck is what a list-result check needs to be rebuilt against a newly
// approved snapshot.
type pageCheck struct {
	kind     digest.Kind
	items    []json.RawMessage
	complete bool
}

// taskResult is what a check found.
type taskResult struct {
	t        *task
	decision *Decision
	approved *digest.Snapshot // the snapshot now approved, when allowed
	hello    *mcpwire.Hello   // the hello the start-up check used
	// err: the definitions could not be checked; beside a refusal, why the
	// listing taken again before it failed (the refusal stands).
	err error
}

// startTask holds traffic and runs t.
func (r *relay) startTask(t *task) {
	r.running = t
	t.clientCaps = r.clientCaps.rawCaps()
	ctx, cancel := context.WithTimeoutCause(r.ctx, r.o.CheckTimeout,
		fmt.Errorf("no complete answer within %s", r.o.CheckTimeout))
	r.tasks.Add(1)
	go func() {
		defer r.tasks.Done()
		defer cancel()
		res := r.runTask(ctx, t)
		res.t = t
		r.mu.Lock()
		r.taskDone(&res)
		r.mu.Unlock()
		r.flush()
		r.signal()
	}()
}

// runTask does the work of a check; it runs on its own goroutine and touches
// no loop state.
func (r *relay) runTask(ctx context.Context, t *task) taskResult {
	if t.page != nil || t.snap != nil {
		return r.checkSnapshot(ctx, t)
	}
	return r.checkListing(ctx, t)
}

// checkSnapshot judges what the client is about to receive (a list result,
// a later server/discover's instructions) against the approved set.
func (r *relay) checkSnapshot(ctx context.Context, t *task) taskResult {
	pol := r.o.Policy
	d, err := pol.Check(ctx, t.snap)
	if err != nil {
		return taskResult{err: err}
	}
	if d.Allow {
		return taskResult{decision: d, approved: t.snap}
	}
	// Before refusing what the client is about to receive, list
	// everything again: the server may have changed as a whole under
	// a signed update the policy rolls forward to, or another proxy may
	// have approved it already.
	full, err := r.listAll(ctx, t.helloR, t.clientCaps)
	if err != nil {
		// The refusal stands, and says why nothing could approve it.
		return taskResult{decision: d, err: fmt.Errorf("listing the server again before the refusal failed: %w", err)}
	}
	d2, err := pol.Check(ctx, full)
	if err != nil {
		return taskResult{decision: d, err: fmt.Errorf("checking the server's listing again before the refusal failed: %w", err)}
	}
	if !d2.Allow || !d2.Updated {
		return taskResult{decision: d}
	}
	a := newApprovedSet(full)
	var snap *digest.Snapshot
	if t.page != nil {
		snap = a.with(t.page)
	} else {
		s := *full
		s.Instructions = t.snap.Instructions
		snap = &s
	}
	d3, err := pol.Check(ctx, snap)
	if err != nil {
		return taskResult{err: err}
	}
	if d3.Allow {
		d3.Updated = true
		return taskResult{decision: d3, approved: full}
	}
	return taskResult{decision: d3}
}

// checkListing lists the server itself (at start-up, after list_changed,
// before refusing a request) and judges the whole listing.
func (r *relay) checkListing(ctx context.Context, t *task) taskResult {
	h := t.hello
	if h == nil && t.relist {
		h = t.helloR
	}
	if h == nil {
		// A modern session that began without server/discover: ask the
		// server itself, with the client's _meta.
		var err error
		if h, err = r.discover(ctx, t.discover); err != nil {
			return taskResult{err: err}
		}
	}
	snap, err := r.listAll(ctx, h, t.clientCaps)
	if err != nil {
		return taskResult{err: err, hello: h}
	}
	d, err := r.o.Policy.Check(ctx, snap)
	if err != nil {
		return taskResult{err: err, hello: h}
	}
	res := taskResult{decision: d, hello: h}
	if d.Allow {
		res.approved = snap
	}
	return res
}

// discover sends the proxy's own server/discover with the client's _meta
// (meta) and reads the answer, which must offer a 2026-07-28 version.
func (r *relay) discover(ctx context.Context, meta []byte) (*mcpwire.Hello, error) {
	params, err := discoverParams(meta)
	var res json.RawMessage
	if err == nil {
		res, err = r.Call(ctx, mcpwire.MethodDiscover, params)
	}
	var h *mcpwire.Hello
	var modern bool
	if err == nil {
		h, modern, err = mcpwire.ParseDiscover(res, meta, proxyClientInfo)
	}
	if err != nil {
		return nil, fmt.Errorf("server/discover: %w", err)
	}
	if !modern {
		return nil, errors.New("server/discover: the server offers no protocol version of the 2026-07-28 generation, and the client sent no initialize")
	}
	return h, nil
}

// discoverParams are the params of the proxy's own server/discover: a
// _meta of the client's protocol version, info and capabilities, or the
// proxy's.
func discoverParams(clientMeta []byte) (json.RawMessage, error) {
	version := mcpwire.ProtocolModern
	if s, ok := mcpwire.MetaVersion(clientMeta); ok && s >= mcpwire.ProtocolModern {
		version = s
	}
	meta, err := mcpwire.RequestMeta(clientMeta, version, proxyClientInfo)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Meta json.RawMessage `json:"_meta"`
	}{meta})
}

// taskDone applies the result of a check: the session goes on (the held
// message is forwarded, then everything held), or it is blocked.
func (r *relay) taskDone(res *taskResult) {
	t := res.t
	r.running = nil
	if r.blocked != nil || r.ended.Load() {
		return
	}
	d := res.decision
	switch {
	case d != nil && !d.Allow:
		// A refusal; err, if any, is why nothing could approve it after all.
		r.block(&BlockedError{What: t.what, Decision: d, Err: res.err, subjectID: t.subjID})
		return
	case res.err != nil:
		r.block(&BlockedError{What: t.what, Err: res.err, subjectID: t.subjID})
		return
	}
	if res.hello != nil {
		r.session = res.hello
	}
	if res.approved != nil && (r.approved == nil || d.Updated || t.startup || t.relist) {
		r.approved = r.o.Approved.intern(res.approved)
	}
	if t.startup {
		r.checked = true
	}
	kind := EventChecked
	if d.Updated {
		kind = EventUpdated
	}
	r.event(Event{Kind: kind, Decision: d, What: t.what})
	if t.subject != nil {
		r.sendClient(t.subject.line)
	}
	r.drain()
}
