package main

import (
	"testing"

	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
)

// TestProxyServerRequests: every kind a policy's serverRequests denies is
// denied by the proxy, and nothing else (the policy read from its JSON, as
// a user writes it).
func TestProxyServerRequests(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		member string
		want   proxy.ServerRequests
	}{
		{`{}`, proxy.ServerRequests{}},
		{`{"sampling":"deny"}`, proxy.ServerRequests{DenySampling: true}},
		{`{"elicitation":"deny","sampling":"relay"}`, proxy.ServerRequests{DenyElicitation: true}},
		{`{"roots":"deny"}`, proxy.ServerRequests{DenyRoots: true}},
		{`{"logging":"deny"}`, proxy.ServerRequests{DenyLogging: true}},
		{`{"sampling":"deny","elicitation":"deny","roots":"deny","logging":"deny"}`, proxy.ServerRequests{DenySampling: true, DenyElicitation: true, DenyRoots: true, DenyLogging: true}},
	} {
		f, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu","serverRequests":`+tt.member+`}}}`), "policy.json")
		if err != nil {
			t.Fatalf("%s: %v", tt.member, err)
		}
		r, err := f.Resolve("notes", policy.ResolveOptions{StateDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", tt.member, err)
		}
		if got := proxyServerRequests(r.ServerRequests); got != tt.want {
			t.Errorf("serverRequests %s: proxy gets %+v, want %+v", tt.member, got, tt.want)
		}
	}
}
