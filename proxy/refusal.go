package proxy

import (
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// refused is the proxy's own answer to a client request that names what the
// approved definitions do not offer.
type refused struct {
	code int
	msg  string
	// relist: the name read strictly and is not approved; the server may
	// have changed under the proxy, so it is listed again before the
	// request is answered (clientMessage).
	relist bool
	// subject names what was asked for, for the re-listing's report.
	subject string
}

// refusal decides whether a client request that uses a definition by name
// may reach the server (called with mu held, once the start-up check has
// passed): a tools/call of a tool, a prompts/get of a prompt, and under the
// pin and hide resource modes a resources/read of a URI, that the approved
// set does not hold is refused; so are params that do not read strictly (a
// lenient reader could take another name from them). nil: the request goes
// on.
func (r *relay) refusal(env *mcpwire.Message) *refused {
	if r.approved == nil {
		return nil
	}
	if k, name, ok := usesDefinition(env); k != "" {
		switch {
		case !ok:
			// Params mcpsign cannot read strictly ("Name" beside "name",
			// a repeated name) could name another tool to the server.
			return &refused{code: codeInvalidParams, msg: "mcpsign proxy: the " + string(k) + " name of " + env.Method + " cannot be read strictly"}
		case !r.approved.hasKey(k, name):
			// A call of a tool (or a prompt) that is not among the approved
			// definitions never reaches the server, whatever the client
			// learnt it from.
			// The answer to the client is an edge: escaped here; the subject
			// is escaped where it is printed.
			name = textsafe.Cut(name, 200)
			return &refused{code: codeInvalidParams, msg: "mcpsign proxy: " + string(k) + " " + textsafe.RawQuote(name) + " is not among the approved definitions", relist: true, subject: string(k) + " " + textsafe.RawQuote(name)}
		}
		return nil
	}
	if env.Method != methodReadResource || (r.o.Resources != ResourcesPin && r.o.Resources != ResourcesHide) {
		return nil
	}
	if _, inFlight := r.pending.Get(env.ID); inFlight {
		return nil // refused on the normal way: one answer per id
	}
	uri, ok := readURI(env.Params)
	switch {
	case !ok:
		return &refused{code: codeInvalidParams, msg: "mcpsign proxy: the uri of resources/read cannot be read strictly"}
	case !r.approved.readable(uri):
		uri = textsafe.Cut(uri, 200)
		return &refused{code: codeResourceNotFound, msg: "mcpsign proxy: resource " + textsafe.RawQuote(uri) + " is not among the approved resources or resource templates", relist: true, subject: "resource " + textsafe.RawQuote(uri)}
	}
	return nil
}

// usesDefinition returns the definition a request uses by name: the tool of
// tools/call, the prompt of prompts/get (k is "" for other requests). ok is
// false when the params do not read strictly as an object with a string
// name: the request is then refused, since a lenient reader could take
// another name from them.
func usesDefinition(env *mcpwire.Message) (k digest.Kind, name string, ok bool) {
	switch env.Method {
	case "tools/call":
		k = digest.KindTool
	case "prompts/get":
		k = digest.KindPrompt
	default:
		return "", "", false
	}
	if len(env.Params) == 0 || env.Params[0] != '{' {
		return k, "", false
	}
	m, err := digest.ReadMembers(env.Params, "name")
	if err != nil {
		return k, "", false
	}
	v, present := m["name"]
	if !present || len(v) == 0 || v[0] != '"' {
		return k, "", false
	}
	name, err = digest.DecodeString(v)
	return k, name, err == nil
}
