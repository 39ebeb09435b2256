package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcpsign/mcpsign/digest"
)

// Protocol facts the proxy relies on.
const (
	// protocolModern is the first version of the stateless generation
	// (SEP-2575): server/discover, and a _meta on every request. Later
	// versions compare greater as strings.
	protocolModern = "2026-07-28"

	methodInitialize = "initialize"
	methodDiscover   = "server/discover"
	methodPing       = "ping"

	methodInitialized = "notifications/initialized"
	// initializedLine is the notifications/initialized the proxy sends.
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"

	codeMethodNotFound = -32601
)

// hello is what the proxy knows of a session to list it itself: the
// protocol generation, the _meta to send under the modern one, and what the
// handshake said (server, instructions, capabilities).
type hello struct {
	modern          bool
	meta            json.RawMessage // modern: the _meta sent with each request
	protocolVersion string
	server          digest.ServerInfo
	instructions    *string
	// caps are the server's capabilities; nil when unknown (a modern
	// session without server/discover): every kind is then listed, and a
	// kind the server does not implement counts as empty.
	caps map[string][]byte
}

// rpcError is a JSON-RPC error answer to one of the proxy's own requests.
type rpcError struct {
	method  string
	code    int64
	message string
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("the server answered %s with error %d: %s", e.method, e.code, strconv.Quote(shorten(e.message, 200)))
}

// ownReply is the server's answer to one of the proxy's own requests.
type ownReply struct {
	result []byte
	err    error
}

// call sends one request of the proxy's own and waits for the answer. Its id
// is a string with the session's random prefix, which the client cannot
// use; the answer is routed here by the server reader and never forwarded.
func (r *relay) call(ctx context.Context, method string, params any) ([]byte, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id := r.prefix + strconv.FormatInt(r.ownSeq.Add(1), 10)
	idJSON, _ := json.Marshal(id)
	ch := make(chan ownReply, 1)
	key := "s:" + id
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
	line := make([]byte, 0, 64+len(method)+len(p))
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, idJSON...)
	line = append(line, `,"method":`...)
	line = strconv.AppendQuote(line, method)
	line = append(line, `,"params":`...)
	line = append(line, p...)
	line = append(line, "}\n"...)
	if err := r.toServer.failed(); err != nil {
		return nil, fmt.Errorf("sending %s to the server: %w", method, err)
	}
	r.toServer.enqueue(line)
	r.toServer.flush()
	select {
	case rep := <-ch:
		if rep.err != nil {
			if re, ok := rep.err.(*rpcError); ok {
				re.method = method
			}
			return nil, rep.err
		}
		return rep.result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the server's answer to %s: %w", method, context.Cause(ctx))
	}
}

// deliverOwn routes the server's answer to one of the proxy's requests. It
// reports whether env was one (and so must not be forwarded).
func (r *relay) deliverOwn(env *envelope) bool {
	if env.kind != kindResponse || len(env.idKey) < 2+len(r.prefix) || env.idKey[2:2+len(r.prefix)] != r.prefix || env.idKey[:2] != "s:" {
		return false
	}
	r.ownMu.Lock()
	ch := r.own[env.idKey]
	delete(r.own, env.idKey)
	r.ownMu.Unlock()
	if ch == nil {
		return true // late or unknown: ours all the same, never forwarded
	}
	if env.errorV != nil {
		ch <- ownReply{err: parseRPCError(env.errorV)}
	} else {
		ch <- ownReply{result: bytes.Clone(env.result)}
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

func parseRPCError(raw []byte) error {
	var e struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return &rpcError{code: 0, message: "unreadable error object"}
	}
	return &rpcError{code: e.Code, message: e.Message}
}

// listParams are the params of one of the proxy's list requests.
type listParams struct {
	Meta   json.RawMessage `json:"_meta,omitempty"`
	Cursor *string         `json:"cursor,omitempty"`
}

// listAll lists every page of every kind the server announced, as a
// snapshot.
func (r *relay) listAll(ctx context.Context, h *hello) (*digest.Snapshot, error) {
	snap := &digest.Snapshot{
		Kind:            digest.SnapshotKind,
		SnapshotVersion: digest.SnapshotVersion,
		Server:          h.server,
		ProtocolVersion: h.protocolVersion,
		Instructions:    h.instructions,
	}
	for _, k := range digest.Kinds {
		defs := []json.RawMessage{}
		if h.caps == nil || announced(h.caps, k.Capability()) {
			var err error
			defs, err = r.listKind(ctx, h, k)
			if err != nil {
				return nil, err
			}
		}
		snap.SetDefinitions(k, defs)
	}
	snap.CapturedAt = time.Now().UTC()
	return snap, nil
}

// listKind reads every page of one kind.
func (r *relay) listKind(ctx context.Context, h *hello, k digest.Kind) ([]json.RawMessage, error) {
	method := k.ListMethod()
	all := []json.RawMessage{}
	seen := map[string]bool{}
	var cursor *string
	for page := 1; ; page++ {
		p := listParams{Cursor: cursor}
		if h.modern {
			p.Meta = h.meta
		}
		raw, err := r.call(ctx, method, p)
		if err != nil {
			var re *rpcError
			if page == 1 && errors.As(err, &re) && re.code == codeMethodNotFound &&
				(h.caps == nil || k == digest.KindResourceTemplate) {
				// A kind the server does not implement has no definitions:
				// resources without templates are common, and without
				// server/discover nothing said which kinds exist.
				return all, nil
			}
			return nil, fmt.Errorf("%s page %d: %w", method, page, err)
		}
		items, next, hasNext, err := digest.SplitList(k, raw)
		if err != nil {
			return nil, fmt.Errorf("%s page %d: %w", method, page, err)
		}
		all = append(all, items...)
		if !hasNext {
			return all, nil
		}
		if seen[next] || (cursor == nil && next == "") {
			return nil, fmt.Errorf("%s page %d: cursor %s repeated", method, page, strconv.Quote(shorten(next, 80)))
		}
		if page >= MaxPages {
			return nil, fmt.Errorf("%s: more than %d pages", method, MaxPages)
		}
		seen[next] = true
		cursor = &next
	}
}

// announced reports whether the server announced the capability name (a
// member that is present and not null).
func announced(caps map[string][]byte, name string) bool {
	v, ok := caps[name]
	return ok && string(v) != "null"
}

// helloFromInitialize reads the result of initialize: protocol version,
// server, instructions and capabilities, strictly (the instructions are
// digested, and the result is what the client receives).
func helloFromInitialize(result []byte) (*hello, error) {
	m, err := members(result, "initialize result")
	if err != nil {
		return nil, err
	}
	h := &hello{}
	if v, ok := m["protocolVersion"]; ok {
		if h.protocolVersion, err = digest.DecodeString(v); err != nil {
			return nil, fmt.Errorf("initialize result: protocolVersion: %w", err)
		}
	}
	if err := h.read(m, "initialize result"); err != nil {
		return nil, err
	}
	return h, nil
}

// helloFromDiscover reads the result of server/discover. meta is the _meta
// of the client's request, whose protocol version, client info and
// capabilities the proxy's own requests repeat; nil means the proxy's own.
// ok is false when the server offers no version of the modern generation
// (a client falls back to initialize then).
func helloFromDiscover(result []byte, meta []byte) (h *hello, ok bool, err error) {
	m, err := members(result, "server/discover result")
	if err != nil {
		return nil, false, err
	}
	var versions []string
	if v, ok := m["supportedVersions"]; ok {
		if err := json.Unmarshal(v, &versions); err != nil {
			return nil, false, fmt.Errorf("server/discover result: supportedVersions: %w", err)
		}
	}
	want := protocolModern
	if meta != nil {
		if pm, err := members(meta, "_meta"); err == nil {
			if v, ok := pm[metaProtocolVersion]; ok {
				if s, err := digest.DecodeString(v); err == nil {
					want = s
				}
			}
		}
	}
	version := ""
	if slices.Contains(versions, want) {
		version = want
	} else {
		for _, v := range versions {
			if v >= protocolModern && v > version {
				version = v
			}
		}
	}
	if version == "" || version < protocolModern {
		return nil, false, nil
	}
	h = &hello{modern: true, protocolVersion: version}
	if err := h.read(m, "server/discover result"); err != nil {
		return nil, false, err
	}
	if h.server == (digest.ServerInfo{}) {
		if meta, ok := m["_meta"]; ok && string(meta) != "null" {
			mm, err := members(meta, "server/discover result _meta")
			if err != nil {
				return nil, false, err
			}
			if h.server, err = digest.ParseServerInfo(mm[metaServerInfo]); err != nil {
				return nil, false, err
			}
		}
	}
	h.meta, err = requestMeta(meta, version)
	return h, true, err
}

// read takes server info, instructions and capabilities from a handshake
// result.
func (h *hello) read(m map[string][]byte, what string) error {
	var err error
	if h.server, err = digest.ParseServerInfo(m["serverInfo"]); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if v, ok := m["instructions"]; ok && string(v) != "null" {
		s, err := digest.DecodeString(v)
		if err != nil {
			return fmt.Errorf("%s: instructions: %w", what, err)
		}
		h.instructions = &s
	}
	h.caps = map[string][]byte{}
	if v, ok := m["capabilities"]; ok && string(v) != "null" {
		if h.caps, err = members(v, what+" capabilities"); err != nil {
			return err
		}
	}
	return nil
}

// requestMeta builds the _meta of the proxy's own modern requests: the
// client's protocol version, client info and capabilities when it sent
// them (so that the server answers the proxy as it answers the client),
// with the version the server offers.
func requestMeta(clientMeta []byte, version string) (json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if clientMeta != nil {
		m, err := members(clientMeta, "the client's _meta")
		if err == nil {
			for _, k := range []string{metaClientInfo, metaClientCapabilities} {
				if v, ok := m[k]; ok {
					out[k] = v
				}
			}
		}
	}
	v, _ := json.Marshal(version)
	out[metaProtocolVersion] = v
	if _, ok := out[metaClientInfo]; !ok {
		out[metaClientInfo] = json.RawMessage(`{"name":"mcpsign-proxy","version":"devel"}`)
	}
	if _, ok := out[metaClientCapabilities]; !ok {
		out[metaClientCapabilities] = json.RawMessage(`{}`)
	}
	return json.Marshal(out)
}

// members returns the members of the JSON object data, refusing repeated
// names (decoded), as subslices of data (digest.Members).
func members(data []byte, what string) (map[string][]byte, error) {
	_, m, err := digest.Members(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return m, nil
}

// shorten cuts s to about max bytes for a message.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
