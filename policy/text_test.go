package policy

import (
	"strings"
	"testing"
)

// TestWriteCheckText: what 'policy check' prints for each server says each
// rule the policy sets, and nothing the policy does not set; the servers
// whose Resolve fails are counted as blocked.
func TestWriteCheckText(t *testing.T) {
	t.Parallel()
	const sig = `{"method":"sigstore","issuer":"https://i.example","subject":"a@example.com"}`
	tests := []struct {
		name, body string
		blocked    int
		want, not  []string
	}{
		{"bare tofu server", `"servers":{"a":{"unsigned":"tofu"}}`, 0,
			[]string{"policy /etc/mcpsign/policy.json: 1 server(s)\n", "trust: the public-good root through TUF\n",
				"server a:\n  identities: none", "  require: nothing more\n", "  bundle: ", "  lock: ", "mode: block, unsigned: tofu, roll-forward: signed\n",
				"  resources: the lock's", "  server requests: all relayed"},
			[]string{"revoked", "max bundle age", "package:", "audit log:", "CA roots", "CA intermediates", "BLOCKED", "signed by"}},
		{"every rule set", `"trust":{"trustedRoot":"root.json","caRoots":"ca.pem","caIntermediates":"int.pem"},
			"servers":{"a":{"identities":[` + sig + `,{"method":"key","key":"k.pem"}],"threshold":2,"require":["tlog","timestamp"],"maxBundleAge":"24h",
			"package":"pkg:npm/a@1.0.0","resources":"pin","audit":"audit.jsonl","mode":"warn","serverRequests":{"sampling":"deny","roots":"deny"}}},
			"revoked":{"identities":["old@example.com"],"bundles":["sha256:` + strings.Repeat("0", 64) + `"]}`, 0,
			[]string{"trust: trusted root /etc/mcpsign/root.json\n", "trust: CA roots /etc/mcpsign/ca.pem\n", "trust: CA intermediates /etc/mcpsign/int.pem\n",
				"  signed by 2 of 2 distinct identities:\n", "  require: tlog, timestamp\n", "  max bundle age: 24h0m0s\n", "  package: pkg:npm/a@1.0.0\n",
				"  resources: pin\n", "  audit log: /etc/mcpsign/audit.jsonl\n", "mode: warn,", "  server requests denied: sampling, roots (the others relayed)\n",
				"\nrevoked: 1 bundle(s), 0 definition(s), 1 identities\n  identity \"old@example.com\"\n"},
			[]string{"public-good", "nothing more", "BLOCKED"}},
		{"sigstore identity, nothing more required", `"trust":{"tuf":{"mirror":"https://tuf.example"}},"servers":{"a":{"identities":[` + sig + `]}}`, 0,
			[]string{"trust: TUF https://tuf.example\n", "  signed by 1 of 1 distinct identities:\n", "  require: nothing more (a sigstore identity always needs its log entry)\n"},
			[]string{"revoked"}},
		{"only a definition revoked", `"servers":{"a":{"unsigned":"tofu"}},"revoked":{"definitions":["sha256:` + strings.Repeat("1", 64) + `"]}`, 0,
			[]string{"\nrevoked: 0 bundle(s), 1 definition(s), 0 identities\n"}, nil},
		{"only an identity revoked", `"servers":{"a":{"unsigned":"tofu"}},"revoked":{"identities":["old@example.com"]}`, 0,
			[]string{"\nrevoked: 0 bundle(s), 0 definition(s), 1 identities\n"}, nil},
		{"key identity, nothing more required", `"servers":{"a":{"identities":[{"method":"key","key":"k.pem"}]}}`, 0,
			[]string{"  signed by 1 of 1 distinct identities:\n    key /etc/mcpsign/k.pem\n", "  require: nothing more\n"}, []string{"sigstore identity"}},
		{"repository signer by default, beside an identity", `"servers":{"io.github.acme/*":{"repositorySigner":{},"identities":[` + sig + `]}}`, 0,
			[]string{"  signed by 1 of 2 distinct identities:\n", "    the entry's repository: issuer https://token.actions.githubusercontent.com, owner the namespace's owner, repositories the one named as the entry, any workflow, refs refs/tags/*, any trigger\n",
				"  lock: none"}, nil},
		{"repository signer, every member", `"servers":{"com.example/*":{"repositorySigner":{"issuer":"https://i.example","owner":"acme","repositories":["a","b"],"workflow":"release.yml","refs":["refs/heads/main"],"triggers":["push","release"]}}}`, 0,
			[]string{"  signed by 1 of 1 distinct identities:\n", "    the entry's repository: issuer https://i.example, owner acme, repositories a, b, workflow release.yml, refs refs/heads/main, triggers push, release\n"}, nil},
		{"two blocked of three", `"servers":{"a":{},"b":{"unsigned":"tofu"},"c":{"identities":[]}}`, 2,
			[]string{"\nserver a: BLOCKED: ", "\nserver c: BLOCKED: ", "server b:\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parse(t, `{`+base+`,`+tt.body+`}`)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if got := f.WriteCheckText(&b); got != tt.blocked {
				t.Errorf("%d blocked, want %d", got, tt.blocked)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in\n%s", w, b.String())
				}
			}
			for _, n := range tt.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("%q in\n%s", n, b.String())
				}
			}
		})
	}
}
