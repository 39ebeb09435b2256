package proxy

import (
	"bytes"
	"errors"
	"slices"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// ServerRequests says which of the requests and notifications a server
// sends on its own may reach the client (docs/PROXY.md, "What the server
// asks of the client"). The zero value relays each of them the client
// announced the capability for. A denied one is removed from the client's
// capabilities the server sees (initialize, or under 2026-07-28 the
// io.modelcontextprotocol/clientCapabilities of every request's _meta),
// answered with a JSON-RPC error (a request) or dropped (a notification)
// if the server sends it anyway, and never reaches the client.
//
// Whatever the policy, a server request for a client capability the
// client did not announce (sampling, elicitation and its mode, roots)
// never reaches the client either.
type ServerRequests struct {
	// DenySampling: sampling/createMessage (text the server writes for the
	// model, its systemPrompt among it).
	DenySampling bool
	// DenyElicitation: elicitation/create (a form or a URL shown to the
	// user).
	DenyElicitation bool
	// DenyRoots: roots/list (the client's roots).
	DenyRoots bool
	// DenyLogging: notifications/message (log lines a host may show or
	// hand to the model).
	DenyLogging bool
}

// The server's own requests and notifications the rule covers, and the
// client capabilities they need.
const (
	methodSampling    = "sampling/createMessage"
	methodElicitation = "elicitation/create"
	methodRoots       = "roots/list"
	methodLogging     = "notifications/message"

	capSampling    = "sampling"
	capElicitation = "elicitation"
	capRoots       = "roots"
)

// deniedCapabilities are the client capabilities the policy removes.
func (s ServerRequests) deniedCapabilities() []string {
	var d []string
	if s.DenySampling {
		d = append(d, capSampling)
	}
	if s.DenyElicitation {
		d = append(d, capElicitation)
	}
	if s.DenyRoots {
		d = append(d, capRoots)
	}
	return d
}

// serverCallRefusal decides a request or notification the server sent on
// its own (called with mu held): "" when it may reach the client, else why
// not. caps are the client capabilities the server was shown (the client's,
// less those the policy removed; nil when unknown: nothing is announced).
func (s ServerRequests) serverCallRefusal(env *mcpwire.Message, caps *clientCaps) string {
	need := ""
	switch env.Method {
	case methodSampling:
		if s.DenySampling {
			return "the policy denies sampling"
		}
		need = capSampling
	case methodElicitation:
		if s.DenyElicitation {
			return "the policy denies elicitation"
		}
		need = capElicitation
	case methodRoots:
		if s.DenyRoots {
			return "the policy denies roots"
		}
		need = capRoots
	case methodLogging:
		if s.DenyLogging {
			return "the policy denies logging"
		}
		return ""
	default:
		return ""
	}
	if env.Kind != mcpwire.KindRequest {
		// These are requests; sent as a notification no client reads them,
		// and nothing a server sends past the rule reaches the client.
		return env.Method + " sent without an id"
	}
	if caps == nil {
		return "the client's capabilities are unknown"
	}
	if !caps.announced[need] {
		return "the client did not announce " + need
	}
	if need == capElicitation && !elicitationModeAnnounced(caps, env.Params) {
		return "the client did not announce this elicitation mode"
	}
	return ""
}

// elicitationModeAnnounced reports whether the mode of elicitation/create
// params ("form" when absent) is one the client's elicitation capability
// announces (clientCaps).
func elicitationModeAnnounced(caps *clientCaps, params []byte) bool {
	mode := "form"
	if len(params) > 0 && params[0] == '{' {
		m, err := digest.ReadMembers(params, "mode")
		if err != nil {
			return false
		}
		if v, ok := m["mode"]; ok {
			s, err := digest.DecodeString(v)
			if err != nil {
				return false
			}
			mode = s
		}
	}
	switch mode {
	case "form":
		return caps.elicitForm
	case "url":
		return caps.elicitURL
	}
	return false
}

// refuseServerCall answers a server request the client may not receive
// with an error (a notification is dropped), and says so on stderr.
func (r *relay) refuseServerCall(env *mcpwire.Message, why string) {
	if env.Kind != mcpwire.KindRequest {
		return
	}
	msg := "mcpsign proxy: " + env.Method + " refused: " + why
	r.answerServer(env.ID, codeRefusedServerRequest, msg)
	r.notice("refused the server's " + env.Method + ": " + why)
}

// answerServer writes an error response of the proxy's own to the server.
func (r *relay) answerServer(id []byte, code int, msg string) {
	r.sendServer(errorLine(id, code, msg, nil))
}

// errStripCapabilities is the error of client capabilities the proxy must
// narrow but cannot read strictly.
var errStripCapabilities = errors.New("the client's capabilities cannot be read strictly")

// stripCapabilities removes the client capabilities the policy denies
// from a client request line that announces capabilities (initialize's
// params.capabilities; the clientCapabilities of a 2026-07-28 _meta),
// leaving every other byte as the client wrote it. A member whose name
// equals a denied one under case folding is removed too (a lenient server
// reader could take it for it). It returns line itself when nothing is
// denied or announced.
func (s ServerRequests) stripCapabilities(line []byte, env *mcpwire.Message) ([]byte, error) {
	denied := s.deniedCapabilities()
	if len(denied) == 0 || env.Kind != mcpwire.KindRequest || len(env.Params) == 0 {
		return line, nil
	}
	content := mcpwire.Content(line)
	v, err := hujson.Parse(content)
	if err != nil {
		return nil, errStripCapabilities
	}
	ptrs := []string{"/params/_meta/" + digest.PointerToken(mcpwire.MetaClientCapabilities)}
	if env.Method == mcpwire.MethodInitialize {
		ptrs = append(ptrs, "/params/capabilities")
	}
	changed := false
	for _, p := range ptrs {
		c := v.Find(p)
		if c == nil {
			continue
		}
		obj, ok := c.Value.(*hujson.Object)
		if !ok {
			continue // not an object: no capability is announced there
		}
		n := len(obj.Members)
		obj.Members = slices.DeleteFunc(obj.Members, func(m hujson.ObjectMember) bool {
			lit, ok := m.Name.Value.(hujson.Literal)
			if !ok {
				return true
			}
			name := lit.String()
			return slices.ContainsFunc(denied, func(d string) bool { return strings.EqualFold(d, name) })
		})
		if len(obj.Members) != n {
			changed = true
			if k := len(obj.Members); k > 0 {
				obj.Members[k-1].Value.AfterExtra = nil // no trailing comma
			}
		}
	}
	if !changed {
		return line, nil
	}
	v.UpdateOffsets()
	out := v.Pack()
	// What goes out must read as strictly as what came in, and announce
	// none of what was removed.
	if _, err := mcpwire.Parse(out); err != nil || bytes.ContainsAny(out, "\r\n") {
		return nil, errStripCapabilities
	}
	return append(out, line[len(content):]...), nil
}

// narrowCapabilities removes the capabilities the policy denies from a
// client request that announces capabilities (the handshake, or a
// 2026-07-28 request's _meta) before anything reads them: the server, the
// proxy's own listings and the lock's check all see the narrowed ones. It
// reports false when the capabilities cannot be read strictly while some
// must be removed: the gate then refuses the request (fail closed).
func (r *relay) narrowCapabilities(m *inbound) bool {
	env := &m.env
	if len(r.o.ServerRequests.deniedCapabilities()) == 0 || (env.Method != mcpwire.MethodInitialize && mcpwire.MetaOf(env.Params) == nil) {
		return true
	}
	line, err := r.o.ServerRequests.stripCapabilities(m.line, env)
	if err == nil && len(line) != len(m.line) {
		var e mcpwire.Message
		if e, err = mcpwire.Parse(mcpwire.Content(line)); err == nil {
			m.line, m.env = line, e
		}
	}
	return err == nil
}

// The members of a 2026-07-28 result that asks the client for input before
// the server answers (docs/PROXY.md, "What the server asks of the client").
const (
	memberResultType    = "resultType"
	memberInputRequests = "inputRequests"
	resultInputRequired = "input_required"
)

// inputRequestsRefusal decides a result the server answered a client
// request with: "" when it may reach the client, else why not. A result
// with resultType "input_required" carries, in inputRequests, requests the
// client fulfils as if the server had sent them on its own (the TypeScript
// SDK v2 does so by default); each is decided by serverCallRefusal, with
// the same capabilities and policy. A result that cannot be read strictly
// where these members are concerned is refused (fail closed).
//
// unreadable reports that the result as a whole does not read strictly (a
// repeated member, a case variant): the caller's own strict reader of a
// handshake or a listing blocks the session for it; any other result is
// refused.
func (s ServerRequests) inputRequestsRefusal(result []byte, caps *clientCaps) (why string, unreadable bool) {
	if len(result) == 0 || result[0] != '{' {
		return "", false
	}
	top, err := digest.ReadMembers(result, memberResultType, memberInputRequests)
	if err != nil {
		return "the result cannot be read strictly: " + err.Error(), true
	}
	rt, ok := top[memberResultType]
	if !ok {
		return "", false
	}
	kind, err := digest.DecodeString(rt)
	if err != nil {
		return "its resultType cannot be read strictly: " + err.Error(), false
	}
	if kind != resultInputRequired {
		return "", false
	}
	raw, ok := top[memberInputRequests]
	if !ok {
		return "", false // requestState only: nothing is asked of the client
	}
	names, reqs, err := digest.Members(raw)
	if err != nil {
		return "its inputRequests cannot be read strictly: " + err.Error(), false
	}
	for _, k := range names {
		req, err := digest.ReadMembers(reqs[k], "method", "params")
		if err != nil {
			return "its inputRequests " + digest.QuoteName(k) + " cannot be read strictly: " + err.Error(), false
		}
		mraw, ok := req["method"]
		if !ok {
			return "its inputRequests " + digest.QuoteName(k) + " has no method", false
		}
		method, err := digest.DecodeString(mraw)
		if err != nil {
			return "the method of its inputRequests " + digest.QuoteName(k) + " cannot be read strictly: " + err.Error(), false
		}
		env := mcpwire.Message{Kind: mcpwire.KindRequest, Method: method, ID: []byte(`0`), Params: req["params"]}
		if why := s.serverCallRefusal(&env, caps); why != "" {
			return method + " (inputRequests " + digest.QuoteName(k) + ") refused: " + why, false
		}
	}
	return "", false
}

// refuseInputRequests answers the client's request whose result asked the
// client for input it may not be asked for with an error instead of the
// result, and says so on stderr.
func (r *relay) refuseInputRequests(id []byte, method, why string) {
	r.answer(id, codeRefusedInputRequests, "mcpsign proxy: the server's input_required answer to "+method+" refused: "+why, nil)
	r.notice("refused the server's input_required answer to " + method + ": " + why)
}
