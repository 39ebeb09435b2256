package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/policy"
)

// TestServerRequests: "serverRequests" is read strictly, resolved as a
// whole member over the defaults, relays what it does not deny, and names
// what it denies by member and by JSON-RPC method.
func TestServerRequests(t *testing.T) {
	t.Parallel()
	f, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,
"defaults":{"unsigned":"tofu","serverRequests":{"sampling":"deny","elicitation":"deny"}},
"servers":{"strict":{},"logs":{"serverRequests":{"logging":"deny","sampling":"relay"}},"open":{"serverRequests":{}}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		server string
		denied []string
		want   policy.ServerRequests
	}{
		{"strict", []string{"sampling", "elicitation"}, policy.ServerRequests{Sampling: policy.RuleDeny, Elicitation: policy.RuleDeny, Roots: policy.RuleRelay, Logging: policy.RuleRelay}},
		// A server's member replaces the defaults' as a whole.
		{"logs", []string{"logging"}, policy.ServerRequests{Sampling: policy.RuleRelay, Elicitation: policy.RuleRelay, Roots: policy.RuleRelay, Logging: policy.RuleDeny}},
		{"open", nil, policy.ServerRequests{Sampling: policy.RuleRelay, Elicitation: policy.RuleRelay, Roots: policy.RuleRelay, Logging: policy.RuleRelay}},
	} {
		r, err := f.Resolve(c.server, policy.ResolveOptions{StateDir: "/"})
		if err != nil {
			t.Fatal(err)
		}
		if r.ServerRequests != c.want || !slices.Equal(r.ServerRequests.Denied(), c.denied) {
			t.Errorf("%s: %+v denies %v, want %+v denying %v", c.server, r.ServerRequests, r.ServerRequests.Denied(), c.want, c.denied)
		}
	}
	strict := policy.ServerRequests{Sampling: policy.RuleDeny, Elicitation: policy.RuleDeny, Roots: policy.RuleDeny, Logging: policy.RuleDeny}
	for _, m := range []string{"sampling/createMessage", "elicitation/create", "roots/list", "notifications/message"} {
		if !strict.DeniesMethod(m) || (policy.ServerRequests{}).DeniesMethod(m) {
			t.Errorf("%s: denied %v by all-deny, %v by the zero value", m, strict.DeniesMethod(m), (policy.ServerRequests{}).DeniesMethod(m))
		}
	}
	for _, m := range []string{"ping", "notifications/progress", "tools/list", "Sampling/createMessage"} {
		if strict.DeniesMethod(m) {
			t.Errorf("%s denied", m)
		}
	}
	if (policy.ServerRequests{}).Denied() != nil {
		t.Error("the zero value denies")
	}

	base := `{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a":{"unsigned":"tofu","serverRequests":`
	for _, c := range []struct{ in, want string }{
		{`{"sampling":"block"}`, `/servers/a/serverRequests/sampling: "block": want one of relay, deny`},
		{`{"sampling":"Deny"}`, `/servers/a/serverRequests/sampling`},
		{`{"tools":"deny"}`, `unknown member "tools"`},
		{`{"Sampling":"deny"}`, `/servers/a/serverRequests`},
		{`{"sampling":"deny","sampling":"relay"}`, `repeated`},
		{`"deny"`, `/servers/a/serverRequests`},
		{`{"logging":true}`, `/servers/a/serverRequests/logging`},
	} {
		_, err := policy.Parse([]byte(base+c.in+`}}}`), "/p.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}
