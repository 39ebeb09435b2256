package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/source"
)

// TestRepositorySignerNamespaceOwner: under a namespace pattern of the
// official registry's GitHub namespaces (io.github.OWNER/*), a repository
// signer is derived only from a repository of OWNER: an entry in acme's
// namespace that names evil's repository, signed by evil's workflow, is
// not acme's.
func TestRepositorySignerNamespaceOwner(t *testing.T) {
	f := stack(t)
	env := sigstack.Require(t)
	pol := fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"trustedRoot":%q},
"servers":{"io.github.acme/*":{"repositorySigner":{"issuer":%q}},"io.github.acme.evil/*":{"repositorySigner":{"issuer":%q}}}}`, env.TrustedRoot, f.ghIssuer, f.ghIssuer)
	pf, err := policy.Parse([]byte(pol), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := registry.New(registry.Options{Policy: pf, HTTPClient: f.srv.Client(),
		// The fixture's bundles are served on 127.0.0.1.
		BundleAddresses: source.LoopbackAddresses})
	if err != nil {
		t.Fatal(err)
	}
	npm := `[{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0","transport":{"type":"stdio"}}]`
	for _, c := range []struct {
		prefix string
		entryCase
	}{
		{"io.github.acme/", entryCase{"notes", "1.0.0", "acme/notes", npm, "good", "good", ""}},
		// acme's namespace, evil's repository and workflow.
		{"io.github.acme/", entryCase{"notes-evil", "1.0.0", "evil/notes", npm, "evil", "evil", registry.StepSigner}},
		// No GitHub owner has a "." in its name: io.github.acme.evil is
		// no namespace the official registry grants to evil.
		{"io.github.acme.evil/", entryCase{"notes", "1.0.0", "evil/notes", npm, "evil", "evil", registry.StepSigner}},
	} {
		r := v.VerifyEntry(context.Background(), f.serverJSON(c.entryCase, c.prefix))
		line, _ := json.Marshal(r)
		if c.step == "" && !r.Verified {
			t.Errorf("%s%s: want verified: %s", c.prefix, c.name, line)
		}
		if c.step != "" && (r.Verified || r.Step != c.step) {
			t.Errorf("%s%s: want a failure at step %s: %s", c.prefix, c.name, c.step, line)
		}
	}
}
