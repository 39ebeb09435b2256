package policy

import "slices"

// ServerRequestRule is what the proxy does with one kind of message a
// server sends the client on its own (docs/POLICY.md, "serverRequests").
type ServerRequestRule string

// The rules. The zero value, a member not given, is RuleRelay.
const (
	// RuleRelay relays the messages to the client (when the client
	// announced the capability they need), as without the member.
	RuleRelay ServerRequestRule = "relay"
	// RuleDeny removes the capability from the client's initialize that
	// the server sees, answers such a request with an error, drops such a
	// notification, and never lets it reach the client.
	RuleDeny ServerRequestRule = "deny"
)

// ServerRequests are the rules for the requests and notifications a server
// initiates (docs/POLICY.md, "serverRequests"): one per kind, "" or
// RuleRelay relays, RuleDeny denies.
type ServerRequests struct {
	// Sampling: sampling/createMessage (client capability "sampling").
	Sampling ServerRequestRule
	// Elicitation: elicitation/create (client capability "elicitation").
	Elicitation ServerRequestRule
	// Roots: roots/list (client capability "roots").
	Roots ServerRequestRule
	// Logging: notifications/message, the server's log messages.
	Logging ServerRequestRule
}

// serverRequestKinds are the members of "serverRequests" in the order the
// format lists them, each with the JSON-RPC methods it governs.
var serverRequestKinds = []struct {
	name    string
	rule    func(*ServerRequests) *ServerRequestRule
	methods []string
}{
	{"sampling", func(s *ServerRequests) *ServerRequestRule { return &s.Sampling }, []string{"sampling/createMessage"}},
	{"elicitation", func(s *ServerRequests) *ServerRequestRule { return &s.Elicitation }, []string{"elicitation/create"}},
	{"roots", func(s *ServerRequests) *ServerRequestRule { return &s.Roots }, []string{"roots/list"}},
	{"logging", func(s *ServerRequests) *ServerRequestRule { return &s.Logging }, []string{"notifications/message"}},
}

// Denied returns the member names of the kinds denied, in the format's
// order ("sampling", "elicitation", "roots", "logging"); nil when none is.
// "sampling", "elicitation" and "roots" are also the names of the client
// capabilities to remove from the client's initialize.
func (s ServerRequests) Denied() []string {
	var out []string
	for _, k := range serverRequestKinds {
		if *k.rule(&s) == RuleDeny {
			out = append(out, k.name)
		}
	}
	return out
}

// DeniesMethod reports whether a server's request or notification of the
// JSON-RPC method is denied: sampling/createMessage, elicitation/create,
// roots/list or notifications/message under a kind that is RuleDeny.
func (s ServerRequests) DeniesMethod(method string) bool {
	for _, k := range serverRequestKinds {
		if slices.Contains(k.methods, method) {
			return *k.rule(&s) == RuleDeny
		}
	}
	return false
}
